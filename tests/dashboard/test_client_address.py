"""The address a dashboard viewer's sign-in attempts are counted by (``st.context.ip_address``), from
Streamlit started as ``evallens dashboard`` starts it, reached over a real websocket."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ClientState
from websockets.sync.client import connect

from dashboard.serve import dashboard_environment, streamlit_command
from evallens.ports import free_port
from evallens.settings import DashboardSettings
from tests.dashboard.conftest import streamlit_serving

pytestmark = pytest.mark.slow

# writes what the sign-in limiter (dashboard/_ui.py) reads as the viewer's address on every run
PROBE = """
import os
import streamlit as st

with open(os.environ["PROBE_OUT"], "w") as out:
    out.write(repr(st.context.ip_address))
"""
NO_DATABASE = "postgresql://127.0.0.1:9/unused"  # the probe never connects


@contextmanager
def dashboard_streamlit(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """Streamlit on a free port with the dashboard's command line and environment, running the probe;
    yields its address and the file the probe writes."""
    script, out = tmp_path / "probe.py", tmp_path / "address.txt"
    script.write_text(PROBE)
    settings = DashboardSettings(dashboard_port=free_port())
    environment = {**dashboard_environment(NO_DATABASE), "PROBE_OUT": str(out)}
    address = f"127.0.0.1:{settings.dashboard_port}"
    with streamlit_serving(streamlit_command(settings, script), f"http://{address}", env=environment):
        yield address, out


def test_a_viewer_cannot_name_its_own_address(tmp_path: Path) -> None:
    """Streamlit serves with uvicorn, which took a loopback peer's ``X-Forwarded-For`` as its address: a
    guesser on loopback, or reaching the dashboard through an SSH tunnel or a port forward, had
    EVALLENS_DASHBOARD_SIGN_IN_ATTEMPTS more sign-ins for every address it named."""
    rerun = BackMsg()
    rerun.rerun_script.CopyFrom(ClientState())
    with dashboard_streamlit(tmp_path) as (address, out):
        with connect(
            f"ws://{address}/_stcore/stream",
            subprotocols=["streamlit"],  # type: ignore[list-item]
            additional_headers={"X-Forwarded-For": "203.0.113.7"},
            open_timeout=30,
        ) as socket:
            socket.send(rerun.SerializeToString())
            deadline = time.monotonic() + 120
            while not out.exists() or not out.read_text():
                assert time.monotonic() < deadline, "the probe never ran"
                time.sleep(0.2)
        # None is Streamlit's word for a loopback peer (counted as "loopback"), not the named address
        assert out.read_text() == "None"
