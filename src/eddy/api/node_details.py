"""What kind of node this is and what it runs on: ``GET /nodeDetails/runTime`` and
``GET /system-details``, in WSO2 SP's shapes.

WSO2's status dashboard calls ``/nodeDetails/runTime`` first when a node is added and keeps
it only if the answer is the bare text ``worker`` or ``manager``. It reads
``/system-details`` once and stores its 14 fields (``WORKERS_DETAILS``). The ``java…``
fields describe the JVM that runs Spark for this worker, read from it once it has started;
before that they say ``n/a``.
"""

from __future__ import annotations

import getpass
import locale
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from eddy import __version__
from eddy.api import bodies
from eddy.api.bodies import R401
from eddy.api.statistics import NOT_AVAILABLE, wso2_time
from eddy.engine.spark.jvm_properties import spark_jvm_properties
from eddy.node.worker import Worker

Runtime = Literal["worker", "manager"]
JAVA_PROPERTIES = {"javaRuntimeName": "java.runtime.name", "javaVMVersion": "java.vm.version",
                   "javaVMVendor": "java.vm.vendor", "javaHome": "java.home",
                   "javaVersion": "java.version"}


def time_zone() -> str:
    """The zone name (``Europe/Berlin``) as Java's ``user.timezone`` gives it, else its
    abbreviation."""
    if os.environ.get("TZ"):
        return os.environ["TZ"].lstrip(":")
    zone_file = Path("/etc/timezone")
    if zone_file.is_file():
        return zone_file.read_text().strip()
    localtime = Path("/etc/localtime")
    if localtime.is_symlink() and "zoneinfo/" in str(localtime.resolve()):
        return str(localtime.resolve()).split("zoneinfo/", 1)[1]
    return time.tzname[0]


def user_country() -> str:
    """The country of the process' locale (``US`` of ``en_US``), as Java's ``user.country``."""
    name = locale.getlocale()[0] or ""
    return name.split("_", 1)[1] if "_" in name else ""


class SystemDetails:
    """The ``/system-details`` body; everything but the JVM's fields is fixed at start."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._jvm: dict[str, str] | None = None
        self._fixed = {
            "carbonId": worker.config.node_id, "osName": platform.system(),
            "osVersion": platform.release(), "userHome": str(Path.home()),
            "userTimezone": time_zone(), "userName": getpass.getuser(),
            "userCountry": user_country(),
            "repoLocation": str(worker.config.data_dir / "deployment"),
            "serverStartTime": wso2_time(worker.node.started),
            "eddyVersion": __version__, "pythonVersion": sys.version.split()[0],
            "pythonImplementation": platform.python_implementation(),
            "osArch": platform.machine(),
            "storeQueryListeners": [{"scheme": listener.scheme, "host": listener.host,
                                     "port": listener.port}
                                    for listener in worker.config.store_query_listeners()]}

    def body(self) -> dict[str, Any]:
        """The body now (the JVM's fields once Spark has started)."""
        if self._jvm is None:
            self._jvm = spark_jvm_properties(JAVA_PROPERTIES)
        java = self._jvm or dict.fromkeys(JAVA_PROPERTIES, NOT_AVAILABLE)
        return {**self._fixed, **java}


def router(worker: Worker, runtime: Runtime) -> APIRouter:
    """``/nodeDetails/runTime`` (answering ``runtime``) and ``/system-details``."""
    api = APIRouter(tags=["node"], responses=R401)
    details = SystemDetails(worker)

    @api.get("/nodeDetails/runTime", response_class=PlainTextResponse,
             summary="What this node is: worker or manager (plain text)",
             responses={200: {"content": {"text/plain": {"schema": {
                 "type": "string", "enum": ["worker", "manager"]}}}}})
    def run_time() -> PlainTextResponse:
        return PlainTextResponse(runtime)

    @api.get("/system-details", response_model=bodies.SystemDetails,
             summary="The worker's runtime, operating system and user")
    def system_details() -> dict[str, Any]:
        return details.body()

    return api
