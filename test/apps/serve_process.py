"""A wooly-serve process for the test drivers of test/apps (with-server.py,
containment.py, soak.py): started on a fresh ipc:// path in a temporary
directory (never a network address), its output in a log file there, and
always stopped by the driver.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time


class ServeProcess:
    """`with ServeProcess(serve, args) as s:` starts the server and waits
    until its socket exists; leaving the block stops it (`stop`)."""

    def __init__(self, serve, args, prefix="wooly-test-"):
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.endpoint = "ipc://" + os.path.join(self.tmp, "serve.sock")
        self.log_path = os.path.join(self.tmp, "serve.log")
        self.serve, self.args = serve, args
        self.proc = None
        self.returncode = None
        self.stop_failure = ""

    def __enter__(self):
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [self.serve, "--listen", self.endpoint] + self.args,
            stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while not os.path.exists(self.endpoint[len("ipc://"):]):
            if self.proc.poll() is not None or time.time() > deadline:
                self.stop()
                raise RuntimeError("wooly-serve did not start:\n" + self.log())
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def running(self):
        return self.proc.poll() is None

    def stop(self, timeout=60):
        """SIGTERM, then SIGKILL after `timeout` s (said in `stop_failure`);
        sets `returncode`. Idempotent."""
        if self.returncode is not None or self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.stop_failure = "wooly-serve did not stop on SIGTERM"
        self.returncode = self.proc.returncode
        self._log.close()
        return self.returncode

    def log(self, last=None):
        """The server's output so far (its last `last` characters)."""
        if hasattr(self, "_log") and not self._log.closed:
            self._log.flush()
        with open(self.log_path, "rb") as f:
            text = f.read().decode(errors="replace")
        return text[-last:] if last else text

    def keep_log(self, path):
        if path:
            shutil.copyfile(self.log_path, path)

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
