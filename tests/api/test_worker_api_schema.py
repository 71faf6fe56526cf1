"""Property-based: schemathesis sends generated requests to every operation of the worker's
``/openapi.json``; no answer is a 5xx, and every answer matches the documented schema
(status code, content type, headers, body)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from worker_process import ADMIN, WorkerProcess

schemathesis = pytest.importorskip("schemathesis")
# Any text is a schema-valid app body, but only a valid Siddhi app is accepted: a 400 for
# generated text is right, so "schema-valid data is accepted" does not apply here.
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

EXAMPLES_PER_OPERATION = 12


def test_generated_requests_get_documented_answers_and_no_5xx(worker: WorkerProcess) -> None:
    with worker.client() as client:
        raw: dict[str, Any] = client.get("/openapi.json").json()
    schema = schemathesis.openapi.from_dict(raw)
    session = requests.Session()
    session.headers["Connection"] = "close"
    # Explicit credentials: schemathesis then also probes each operation without them and
    # with wrong ones, and expects a refusal.
    basic = {"Authorization": "Basic " + base64.b64encode(":".join(ADMIN).encode()).decode()}
    certificate = str(worker.data / "security" / "eddy-worker.crt")
    tested = []
    for result in schema.get_all_operations():
        operation = result.ok()
        tested.append(operation.label)

        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def check(case: Any) -> None:
            case.call_and_validate(base_url=worker.base_url, session=session, headers=basic,
                                  verify=certificate,
                                  excluded_checks=[positive_data_acceptance])

        check()
    session.close()
    assert len(tested) >= 20
