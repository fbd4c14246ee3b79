from dagster import DynamicPartitionsDefinition

# One partition per source document, keyed by the document's identity (its location),
# not its bytes: a new version of a file re-materializes the same partition.
documents_partitions = DynamicPartitionsDefinition(name="documents")
