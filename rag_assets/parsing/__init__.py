"""Document parsing: Docling pipelines and post-conversion repairs."""
