"""The org storage's errors, each turned into the small error it is (org/location.py)."""

from __future__ import annotations


def test_a_status_code_inside_a_bucket_name_or_a_duration_is_no_refusal() -> None:
    """A random bucket name `org-9e403191…` once turned a refused connection into "access
    denied" (the test of an unreachable endpoint failed now and then)."""
    from precedents.errors import OrgDenied, OrgUnreachable
    from precedents.org.location import OrgLocation, translated

    where = OrgLocation.parse("s3://org-9e403191b0dc/index")
    refused = (
        "Generic S3 error: Error performing GET http://127.0.0.1:54725/org-9e403191b0dc/"
        "index/_precedents/served.json in 401.9ms, after 3 retries - HTTP error: error "
        "sending request"
    )
    assert isinstance(translated(where, "reading", Exception(refused)), OrgUnreachable)
    denied = "Client error with status 403 Forbidden: <Code>AccessDenied</Code>"
    assert isinstance(translated(where, "reading", Exception(denied)), OrgDenied)
    assert isinstance(translated(where, "reading", Exception("HTTP 401")), OrgDenied)
