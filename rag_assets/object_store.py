"""A prefix of an S3-compatible bucket (``s3://bucket/prefix``, RAG_ASSETS_OBJECT_STORE)
holding the dense index (LanceDB, through its own object-store client) and the publication
pointer (one JSON object, through boto3).

The pointer is replaced by conditional PUTs only: ``If-None-Match: *`` creates it,
``If-Match: <ETag read>`` replaces the version that was read. A PUT is atomic (a reader
gets the old object or the new one, whole), and a writer that lost a race is refused
(412) instead of overwriting the winner's entry: it reads again and retries. S3 has
honoured both headers since 2024; MinIO and moto do too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlparse

# The error codes of a refused conditional write: 412, or 409 when another conditional
# write on the same key is in flight (AWS's ConditionalRequestConflict).
REFUSED = ("PreconditionFailed", "ConditionalRequestConflict", "412", "409")


@dataclass(frozen=True)
class ObjectStore:
    uri: str  # s3://bucket/prefix
    endpoint: str | None = None  # http(s)://host:port of an S3-compatible server; None: AWS
    region: str = "us-east-1"
    access_key_id: str | None = field(default=None, repr=False)  # None: the AWS_* environment
    secret_access_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parsed = urlparse(self.uri)
        if parsed.scheme != "s3" or not parsed.netloc:
            raise ValueError(f"object store URI must be s3://bucket[/prefix], not {self.uri!r}")

    @classmethod
    def from_settings(cls, settings) -> ObjectStore | None:
        if not settings.object_store:
            return None
        return cls(
            settings.object_store,
            settings.s3_endpoint,
            settings.s3_region,
            settings.s3_access_key_id,
            settings.s3_secret_access_key,
        )

    @property
    def bucket(self) -> str:
        return urlparse(self.uri).netloc

    @property
    def prefix(self) -> str:
        return urlparse(self.uri).path.strip("/")

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def uri_of(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"

    def storage_options(self) -> dict[str, str]:
        """LanceDB's `storage_options` (keys of the Rust object_store crate)."""
        options = {"region": self.region}
        if self.endpoint:
            options["endpoint"] = self.endpoint
            options["allow_http"] = str(self.endpoint.startswith("http://")).lower()
        if self.access_key_id:
            options["aws_access_key_id"] = self.access_key_id
        if self.secret_access_key:
            options["aws_secret_access_key"] = self.secret_access_key
        return options

    @cached_property
    def client(self):
        import boto3  # only needed with an object store

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=self.region,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
        )

    def _missing(self, error) -> bool:
        return error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound")

    def read_json(self, name: str) -> tuple[Any, str | None]:
        """(payload, ETag) of object `name`; (None, None) when it does not exist."""
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key(name))
        except ClientError as error:
            if self._missing(error):
                return None, None
            raise
        return json.loads(response["Body"].read()), response["ETag"]

    def etag(self, name: str) -> str | None:
        """The ETag of object `name` (a HEAD request), None when it does not exist."""
        from botocore.exceptions import ClientError

        try:
            return self.client.head_object(Bucket=self.bucket, Key=self.key(name))["ETag"]
        except ClientError as error:
            if self._missing(error):
                return None
            raise

    def replace_json(self, name: str, payload: Any, expected: str | None) -> bool:
        """Write `payload` as object `name` in one PUT if the object is still the version
        read (ETag `expected`; None: if it still does not exist). False when refused."""
        from botocore.exceptions import ClientError

        body = json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True, default=str).encode()
        condition = {"IfMatch": expected} if expected else {"IfNoneMatch": "*"}
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self.key(name), Body=body, ContentType="application/json", **condition
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in REFUSED:
                return False
            raise
        return True
