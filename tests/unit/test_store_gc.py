"""The payload store's collection as pure parts: finding references anywhere in an
event, and what a sweep keeps and removes."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.api.history.v1 import HistoryEvent

from durable_agents.dataplane.store_gc import (
    ENCODED_MARKER,
    GcReport,
    UnreadableReference,
    needed_blobs,
    references,
    sweep,
)


def reference(digest: str, driver: str = "local.directory") -> Payload:
    body = {"driverName": driver, "claimData": {"manifest": digest}}
    return Payload(
        metadata={
            "encoding": b"json/protobuf",
            "messageType": b"temporal.api.sdk.v1.ExternalStorageReference",
        },
        data=json.dumps(body).encode(),
    )


def test_references_are_found_in_lists_maps_and_nested_messages_only_of_this_store():
    event = HistoryEvent()
    scheduled = event.activity_task_scheduled_event_attributes
    scheduled.input.payloads.append(reference("a" * 64))
    scheduled.header.fields["trace"].CopyFrom(reference("b" * 64))
    scheduled.input.payloads.append(reference("c" * 64, driver="aws.s3driver"))
    scheduled.input.payloads.append(Payload(metadata={"encoding": b"json/plain"}, data=b"{}"))
    garbled = reference("d" * 64)
    garbled.data = b"not json"
    scheduled.input.payloads.append(garbled)
    assert sorted(references(event)) == ["a" * 64, "b" * 64]


def test_a_sweep_keeps_what_is_needed_or_young_and_removes_old_orphans(tmp_path):
    manifest, chunk, orphan, young = "1" * 64, "2" * 64, "3" * 64, "4" * 64
    old = time.time() - 7200
    files = {
        manifest: json.dumps({"chunks": [chunk]}),
        chunk: "data",
        orphan: "x",
        young: "y",
        ".0123456789abcdef.partial": "half a write, long ago",
    }
    for name, content in files.items():
        path = tmp_path / (name[:2] if not name.startswith(".") else "01") / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(content)
        if name != young:
            os.utime(path, (old, old))
    report = GcReport(directory=str(tmp_path), dry_run=False)
    needed = needed_blobs(tmp_path, {manifest, "9" * 64}, report)
    assert needed == {manifest, chunk, "9" * 64} and report.missing_manifests == ["9" * 64]
    sweep(tmp_path, needed, older_than=timedelta(hours=1), report=report)
    assert {p.name for p in tmp_path.glob("*/*")} == {manifest, chunk, young}
    assert (report.kept_blobs, report.young_blobs, report.removed_blobs) == (2, 1, 2)


def test_hostile_or_unreadable_references_never_name_a_file_outside_the_store():
    event = HistoryEvent()
    payloads = event.activity_task_scheduled_event_attributes.input.payloads
    for digest in ("/dev/zero", "../../etc/passwd", "A" * 64):
        payloads.append(reference(digest))
    listed = reference("e" * 64)
    listed.data = b"[]"  # JSON, but no object
    payloads.append(listed)
    assert list(references(event)) == []


def test_a_codec_encoded_reference_stops_the_collection():
    event = HistoryEvent()
    encoded = Payload(metadata={ENCODED_MARKER: b"true", "encoding": b"binary/encrypted"})
    event.activity_task_scheduled_event_attributes.input.payloads.append(encoded)
    with pytest.raises(UnreadableReference, match="removes nothing"):
        list(references(event))


def test_a_legacy_reference_is_read():
    legacy = Payload(
        metadata={"encoding": b"json/external-storage-reference"},
        data=json.dumps(
            {
                "driver_name": "local.directory",
                "driver_claim": {"claim_data": {"manifest": "f" * 64}},
            }
        ).encode(),
    )
    event = HistoryEvent()
    event.activity_task_scheduled_event_attributes.input.payloads.append(legacy)
    assert list(references(event)) == ["f" * 64]


def test_a_manifest_that_lists_no_chunks_or_is_no_json_is_kept_and_reported(tmp_path):
    odd, broken = "5" * 64, "6" * 64
    for name, content in ((odd, json.dumps({"chunks": "abc"})), (broken, "{not json")):
        path = tmp_path / name[:2] / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(content)
    report = GcReport(directory=str(tmp_path), dry_run=True)
    assert needed_blobs(tmp_path, {odd, broken}, report) == {odd, broken}
    assert sorted(report.unreadable_manifests) == [odd, broken]


def test_a_worker_s_s3_store_is_found_for_its_scheduled_collection(tmp_path):
    from durable_agents.dataplane.payload_store import external_storage
    from durable_agents.dataplane.store_gc import s3_bucket

    s3 = external_storage({"AGENT_PAYLOAD_STORE": "s3://fleet-payloads"})
    directory = external_storage({"AGENT_PAYLOAD_STORE": str(tmp_path)})
    assert s3 is not None and directory is not None
    assert [s3_bucket(d) for d in s3.drivers] == ["fleet-payloads"]
    assert [s3_bucket(d) for d in directory.drivers] == [None]
