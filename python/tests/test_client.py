"""Tests of the ddrun client against a real `coordinator serve`.

The Go test e2e/TestServePython starts the service over TLS and runs these
with DDRUN_URL (the service), DDRUN_API_TOKEN_FILE (its tokens),
DDRUN_CA_FILE (the CA of its certificate), DDRUN_EXAMPLES (the
repository's examples/) and DDRUN_LONG_MODEL (a model that runs until
cancelled) set; by hand (the client finds the token serve generates for
its user):

    coordinator serve --listen 127.0.0.1:8080 &
    DDRUN_URL=http://127.0.0.1:8080 DDRUN_EXAMPLES=examples PYTHONPATH=python \
        python3 -m unittest discover -s python/tests
"""

import contextlib
import io
import os
import tempfile
import time
import unittest
from unittest import mock

import ddrun

URL = os.environ.get("DDRUN_URL")
EXAMPLES = os.environ.get("DDRUN_EXAMPLES", "examples")


@unittest.skipUnless(URL, "DDRUN_URL is not set: start `coordinator serve` and point DDRUN_URL at it")
class ClientTest(unittest.TestCase):
    def setUp(self):
        self.c = ddrun.Client(URL)
        self.potts = os.path.join(EXAMPLES, "potts-20x20.uai")

    def test_solve_path(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            sol = self.c.solve(self.potts, max_iter=200)
        self.assertEqual(sol.status, "optimal")
        self.assertEqual(sol.state, "done")
        self.assertAlmostEqual(sol.dual, sol.primal, places=6)
        self.assertAlmostEqual(sol.gap, 0, places=9)  # the two sums differ in rounding order
        self.assertEqual(len(sol.assignment), 400)
        self.assertTrue(all(0 <= x < 8 for x in sol.assignment))
        self.assertGreater(len(sol.trace), 0)
        last = sol.trace[-1]
        self.assertEqual(last["iteration"], sol.iterations)
        self.assertEqual(last["dual"], sol.dual)
        self.assertEqual(last["primal"], sol.primal)
        # Not a terminal: plain lines that name the job, the last one done.
        lines = err.getvalue().splitlines()
        self.assertTrue(lines, "no progress lines on stderr")
        self.assertIn(sol.id + " done", lines[-1])
        self.assertIn(sol.id, [j["id"] for j in self.c.jobs()])

    def test_solve_bytes_quiet(self):
        with open(os.path.join(EXAMPLES, "logic-small.json"), "rb") as f:
            data = f.read()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            sol = self.c.solve(data, progress=False, algo="subgradient", max_iter=300, time_limit=30)
        self.assertEqual(err.getvalue(), "")
        self.assertIn(sol.status, ("optimal", "converged", "iteration_limit"))
        self.assertEqual(len(sol.assignment), 10)
        self.assertLessEqual(sol.primal, sol.dual + 1e-9)

    def test_submit_status_result(self):
        job = self.c.submit(self.potts, max_iter=100, threads=1)
        st = self.c.wait(job, progress=False, timeout=60)
        self.assertEqual(st["state"], "done")
        self.assertEqual(self.c.status(job)["id"], job)
        mpe = self.c.result(job, format="uai")
        self.assertTrue(mpe.startswith("MPE\n400 "), mpe[:20])
        res = self.c.result(job)
        self.assertEqual(mpe.split()[2:], [str(x) for x in res["assignment"]])

    def test_errors(self):
        cases = [
            ("bad model", lambda: self.c.submit(b"garbage", format="uai"), 400, "model.uai"),
            ("bad setting", lambda: self.c.submit(self.potts, max_iter="many"), 400, "max_iter"),
            ("unknown setting", lambda: self.c.submit(self.potts, iters=3), 400, "iters"),
            ("unknown id", lambda: self.c.status("j0123456789abcdef"), 404, "no such job"),
            ("unknown id result", lambda: self.c.result("j0123456789abcdef"), 404, "no such job"),
            ("unreachable", lambda: ddrun.Client("http://127.0.0.1:1").jobs(), 0, "127.0.0.1:1"),
            ("wrong token", lambda: ddrun.Client(URL, token="wrong-token-0123456789").jobs(), 401, "API token"),
            ("wrong token submit", lambda: ddrun.Client(URL, token="wrong-token-0123456789").submit(self.potts), 401,
             "API token"),
        ]
        for name, f, status, says in cases:
            with self.subTest(name):
                with self.assertRaises(ddrun.Error) as cm:
                    f()
                self.assertEqual(cm.exception.status, status)
                self.assertIn(says, str(cm.exception))

    @unittest.skipUnless(os.environ.get("DDRUN_LONG_MODEL"), "DDRUN_LONG_MODEL is not set")
    def test_cancel(self):
        job = self.c.submit(os.environ["DDRUN_LONG_MODEL"], algo="subgradient", tol=0, max_iter=10**8,
                            time_limit="2m", threads=1)
        deadline = time.monotonic() + 60
        while self.c.status(job)["iteration"] == 0:
            self.assertLess(time.monotonic(), deadline, "the job never started")
            time.sleep(0.02)
        with self.assertRaises(ddrun.Error) as cm:
            self.c.result(job)
        self.assertEqual(cm.exception.status, 409)
        self.c.cancel(job)
        st = self.c.wait(job, progress=False, timeout=30)
        self.assertEqual(st["state"], "cancelled")
        self.assertEqual(self.c.result(job)["status"], "interrupted")

    def test_no_token(self):
        # No token anywhere (the default file under an empty state
        # directory): the service answers 401, and no job is made.
        before = len(self.c.jobs())
        with tempfile.TemporaryDirectory() as state:
            env = {k: v for k, v in os.environ.items() if not k.startswith("DDRUN_API_TOKEN")}
            env["XDG_STATE_HOME"] = state
            with mock.patch.dict(os.environ, env, clear=True):
                c = ddrun.Client(URL)
                with self.assertRaises(ddrun.Error) as cm:
                    c.submit(self.potts)
        self.assertEqual(cm.exception.status, 401)
        self.assertEqual(len(self.c.jobs()), before)

    @unittest.skipUnless(URL and URL.startswith("https://"), "the service is not served over TLS")
    def test_tls_needs_the_ca(self):
        # Without the CA file the service's certificate is not trusted:
        # no request is made.
        env = {k: v for k, v in os.environ.items() if k != "DDRUN_CA_FILE"}
        with mock.patch.dict(os.environ, env, clear=True):
            with self.assertRaises(ddrun.Error) as cm:
                ddrun.Client(URL).jobs()
        self.assertEqual(cm.exception.status, 0)
        self.assertIn("CERTIFICATE_VERIFY_FAILED", str(cm.exception))


class TokenFileTest(unittest.TestCase):
    def test_token_sources(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tokens")
            with open(path, "w") as f:
                f.write("# comment\n\nalice  alice-token-0123456789\nbob-token-0123456789\n")
            env = {k: v for k, v in os.environ.items() if not k.startswith("DDRUN_API_TOKEN")}
            env["XDG_STATE_HOME"] = d
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(ddrun.Client("http://x", token_file=path)._token, "alice-token-0123456789")
                self.assertEqual(ddrun.Client("http://x", token="t-0123456789abcdef", token_file=path)._token,
                                 "t-0123456789abcdef")
                self.assertIsNone(ddrun.Client("http://127.0.0.1:8080")._token)
                os.makedirs(os.path.join(d, "ddrun"))
                with open(os.path.join(d, "ddrun", "api-token"), "w") as f:
                    f.write("generated-0123456789abcdef\n")
                for url in ("http://127.0.0.1:8080", "https://localhost:1", "http://[::1]:8080/"):
                    self.assertEqual(ddrun.Client(url)._token, "generated-0123456789abcdef", url)
                # The local service's token is not sent to another host.
                self.assertIsNone(ddrun.Client("https://ddrun.example:8443")._token)
                os.environ["DDRUN_API_TOKEN_FILE"] = path
                self.assertEqual(ddrun.Client("http://x")._token, "alice-token-0123456789")
                os.environ["DDRUN_API_TOKEN"] = "env-0123456789abcdef"
                self.assertEqual(ddrun.Client("http://x")._token, "env-0123456789abcdef")
            with open(path, "w") as f:
                f.write("# nothing\n")
            with self.assertRaises(ddrun.Error):
                ddrun.Client("http://x", token_file=path)


class GridModelTest(unittest.TestCase):
    def test_grid_model(self):
        try:
            import numpy as np
        except ImportError:
            with self.assertRaises(ImportError) as cm:
                ddrun.grid_model([[[0.0, 1.0]]], 0.5)
            self.assertIn("numpy", str(cm.exception))
            return
        import json
        u = np.zeros((2, 3, 2))
        u[:, :, 1] = 1.0
        doc = json.loads(ddrun.grid_model(u, 0.5))
        self.assertEqual(doc["cards"], [2] * 6)
        self.assertEqual(len(doc["factors"]), 7)  # 2*2 horizontal + 3 vertical
        doc = json.loads(ddrun.grid_model(u, np.eye(2)))
        self.assertEqual(doc["factors"][0]["table"], [1.0, 0.0, 0.0, 1.0])
        with self.assertRaises(ValueError):
            ddrun.grid_model(u, np.eye(3))
        if URL:
            sol = ddrun.Client(URL).solve(ddrun.grid_model(u, 0.5), progress=False, max_iter=100)
            self.assertEqual(sol.assignment, [1] * 6)
            self.assertAlmostEqual(sol.primal, 6 + 7 * 0.5)


if __name__ == "__main__":
    unittest.main()


class FractionTest(unittest.TestCase):
    """The progress bar measures a job by its own limits, no default of
    the client's."""

    def test_fraction(self):
        self.assertEqual(ddrun._fraction({"params": {"max_iter": "200"}}, 50), 0.25)
        self.assertEqual(ddrun._fraction({"params": {}, "eta_seconds": 3.0, "seconds": 1.0}, 5), 0.25)
        self.assertEqual(ddrun._fraction({"params": {}}, 5), 0.0)


class FormatTest(unittest.TestCase):
    def test_format_of(self):
        for path, want in [("m.uai", "uai"), ("M.UAI.GZ", "uai.gz"), ("m.mp", "msgpack"),
                           ("m.wcsp", "wcsp"), ("m.wcsp.gz", "wcsp.gz"), ("m.cfn", "cfn"), ("m.cfn.gz", "cfn.gz")]:
            self.assertEqual(ddrun._format_of(path), want, path)
        with self.assertRaises(ddrun.Error):
            ddrun._format_of("m.txt")
