"""A throwaway local PostgreSQL server, for tests and benchmarks of the PostgreSQL store.

``TempPostgres`` runs ``initdb`` into a fresh directory, starts ``postgres`` on a free port of
127.0.0.1, waits until it accepts connections and, on exit, stops it and deletes the directory.
PostgreSQL refuses to run as root, so under root the server runs as the ``postgres`` system
user (created with ``useradd`` when missing). The binaries are found through ``LOCKGATE_PG_BINDIR``,
``pg_config --bindir`` or ``/usr/lib/postgresql/<version>/bin`` (Debian's ``postgresql-15``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from lockgate.errors import StoreError

_SERVER_USER = "postgres"


def find_bindir() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``, or None when PostgreSQL is missing."""
    candidates: list[Path] = []
    if os.environ.get("LOCKGATE_PG_BINDIR"):
        candidates.append(Path(os.environ["LOCKGATE_PG_BINDIR"]))
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            candidates.append(Path(result.stdout.strip()))
    debian = Path("/usr/lib/postgresql").glob("*/bin")
    candidates.extend(sorted(debian, key=lambda p: _major(p.parent.name), reverse=True))
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "postgres").is_file():
            return directory
    return None


def _major(name: str) -> int:
    return int(name) if name.isdigit() else 0


class TempPostgres:
    """A PostgreSQL server living as long as this object is entered.

    ``fast=True`` turns off fsync and synchronous commit: right for tests, not for durability
    figures (the benchmark keeps the defaults).
    """

    def __init__(self, *, fast: bool = True, startup_timeout: float = 60.0) -> None:
        self.fast = fast
        self.startup_timeout = startup_timeout
        self.dsn: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None

    def __enter__(self) -> TempPostgres:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> str:
        """Start the server and return its DSN; StoreError when it cannot be started."""
        bindir = find_bindir()
        if bindir is None:
            raise StoreError("no PostgreSQL server binaries (install the Debian package postgresql-15)")
        user = _server_user()
        self._dir = Path(tempfile.mkdtemp(prefix="lockgate-pg-"))
        data = self._dir / "data"
        try:
            if user is not None:
                os.chown(self._dir, user.pw_uid, user.pw_gid)
            self._run_as(user, [str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                "-E", "UTF8", "--no-locale", "--no-sync"])
            port = _free_port()
            self._process = self._spawn(user, bindir, data, port)
            self.dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self.dsn

    def stop(self) -> None:
        """Fast shutdown (SIGINT), then SIGKILL if it lingers; delete the data directory."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _spawn(self, user: pwd.struct_passwd | None, bindir: Path, data: Path, port: int) -> subprocess.Popen[bytes]:
        settings = {"listen_addresses": "127.0.0.1", "port": str(port), "unix_socket_directories": str(self._dir),
                    "max_connections": "100"}
        if self.fast:
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        args = [str(bindir / "postgres"), "-D", str(data)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        log = open(self._log_path(), "wb")  # noqa: SIM115 - handed to the child, closed below
        try:
            return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, **_as_user(user))
        finally:
            log.close()

    def _wait_ready(self) -> None:
        """Poll with a real connection attempt until the server answers or the deadline passes."""
        import psycopg

        assert self._process is not None and self.dsn is not None
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._process.poll() is not None:
                raise StoreError(f"postgres exited with {self._process.returncode}: {self._log_tail()}")
            try:
                psycopg.connect(self.dsn, connect_timeout=2).close()
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise StoreError(f"postgres did not accept connections in time: {exc}; {self._log_tail()}") from exc
            time.sleep(0.02)

    def _run_as(self, user: pwd.struct_passwd | None, args: list[str]) -> None:
        result = subprocess.run(args, capture_output=True, text=True, check=False, **_as_user(user))
        if result.returncode != 0:
            raise StoreError(f"{Path(args[0]).name} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")

    def _log_path(self) -> Path:
        assert self._dir is not None
        return self._dir / "server.log"

    def _log_tail(self) -> str:
        try:
            return self._log_path().read_text(errors="replace")[-2000:]
        except OSError:
            return "(no server log)"


def _server_user() -> pwd.struct_passwd | None:
    """None when not root (the server runs as us); else the ``postgres`` user, created if needed."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(_SERVER_USER)
    except KeyError:
        pass
    result = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", _SERVER_USER],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise StoreError(f"cannot create the {_SERVER_USER} user to run PostgreSQL as: {result.stderr.strip()}")
    return pwd.getpwnam(_SERVER_USER)


def _as_user(user: pwd.struct_passwd | None) -> dict[str, Any]:
    if user is None:
        return {}
    env = {**os.environ, "HOME": tempfile.gettempdir(), "USER": user.pw_name, "LOGNAME": user.pw_name}
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": [], "env": env, "cwd": tempfile.gettempdir()}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
