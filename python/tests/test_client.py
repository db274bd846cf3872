"""Tests of the ddrun client against a real `coordinator serve`.

The Go test e2e/TestServePython starts the service and runs these with
DDRUN_URL (the service), DDRUN_EXAMPLES (the repository's examples/) and
DDRUN_LONG_MODEL (a model that runs until cancelled) set; by hand:

    coordinator serve --listen 127.0.0.1:8080 &
    DDRUN_URL=http://127.0.0.1:8080 DDRUN_EXAMPLES=examples PYTHONPATH=python \
        python3 -m unittest discover -s python/tests
"""

import contextlib
import io
import os
import time
import unittest

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
