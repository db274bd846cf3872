"""Client for ddrun's job service (``coordinator serve``).

Standard library only::

    import ddrun
    c = ddrun.Client("http://127.0.0.1:8080")
    sol = c.solve("examples/potts-20x20.uai", max_iter=500)
    print(sol.status, sol.dual, sol.primal, sol.gap, sol.assignment[:10])

Every request carries an API token (``Authorization: Bearer``), the first
found of: ``token=``, ``token_file=``, ``$DDRUN_API_TOKEN``,
``$DDRUN_API_TOKEN_FILE``, and, for a service on this machine (a loopback
URL) only, the token ``coordinator serve`` generates for its user
(``$XDG_STATE_HOME/ddrun/api-token`` or ``~/.local/state/ddrun/api-token``). For an ``https://`` service whose
certificate is not signed by a system CA, give the CA's PEM file as
``ca_file=`` or ``$DDRUN_CA_FILE``.

``submit``, ``status``, ``wait``, ``result``, ``trace``, ``cancel`` and
``jobs`` are the API's operations one by one. Errors the service reports
raise :class:`Error` with its message and HTTP status.

With numpy installed, :func:`grid_model` builds a grid model from arrays.
"""

import csv
import io
import json
import math
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "Error", "Solution", "grid_model"]
__version__ = "0.1.0"

_FORMATS = {".uai": "uai", ".uai.gz": "uai.gz", ".json": "json", ".msgpack": "msgpack", ".mp": "msgpack",
            ".wcsp": "wcsp", ".wcsp.gz": "wcsp.gz", ".cfn": "cfn", ".cfn.gz": "cfn.gz"}
_CONTENT_TYPES = {"uai": "text/plain", "uai.gz": "application/gzip", "json": "application/json",
                  "msgpack": "application/msgpack", "wcsp": "text/plain", "wcsp.gz": "application/gzip",
                  "cfn": "application/json", "cfn.gz": "application/gzip"}
_FINAL = ("done", "failed", "cancelled")


class Error(Exception):
    """An error the job service answered (``status`` is the HTTP status,
    0 when the service could not be reached)."""

    def __init__(self, message, status=0):
        super().__init__(message)
        self.message = message
        self.status = status


class Solution:
    """A finished job: its result (the object ``coordinator solve --json``
    prints, in ``result``) and convergence trace (a list of dicts with the
    columns of the trace CSV)."""

    def __init__(self, job_id, state, result, trace):
        self.id = job_id
        self.state = state
        self.result = result
        self.trace = trace
        self.status = result.get("status")
        self.dual = result.get("dual")
        self.primal = result.get("primal")
        self.gap = result.get("gap")
        self.iterations = result.get("iterations")
        self.assignment = result.get("assignment")

    def __repr__(self):
        return "Solution(id={!r}, status={!r}, iterations={}, dual={}, primal={}, gap={})".format(
            self.id, self.status, self.iterations, self.dual, self.primal, self.gap)


def _setting(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _format_of(path):
    p = str(path).lower()
    for ext in sorted(_FORMATS, key=len, reverse=True):
        if p.endswith(ext):
            return _FORMATS[ext]
    raise Error("{}: unknown model format (want .uai, .uai.gz, .json, .msgpack, .wcsp, .cfn (each also .gz), or give format=)".format(path))


def _read_token(path):
    """The token of a token file: its first line that is neither blank nor
    a comment, the last of its fields (a line is TOKEN or NAME TOKEN)."""
    with open(os.fspath(path), encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if fields and not fields[0].startswith("#"):
                return fields[-1]
    raise Error("{}: no token".format(path))


def _default_token_file():
    state = os.environ.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "ddrun", "api-token")


def _is_loopback(url):
    host = urllib.parse.urlsplit(url).hostname or ""
    return host == "localhost" or host == "::1" or host.startswith("127.")


def _find_token(url, token, token_file):
    if token:
        return token
    if token_file:
        return _read_token(token_file)
    if os.environ.get("DDRUN_API_TOKEN"):
        return os.environ["DDRUN_API_TOKEN"].strip()
    if os.environ.get("DDRUN_API_TOKEN_FILE"):
        return _read_token(os.environ["DDRUN_API_TOKEN_FILE"])
    path = _default_token_file()
    # The generated token is the local service's: never sent elsewhere.
    if _is_loopback(url) and os.path.exists(path):
        return _read_token(path)
    return None


class Client:
    """A client of the job service at ``url`` (e.g. ``http://127.0.0.1:8080``
    or ``https://...``), with an API token and, for TLS, a CA file (see the
    module's documentation for where they are found)."""

    def __init__(self, url, timeout=60.0, token=None, token_file=None, ca_file=None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._token = _find_token(self.url, token, token_file)
        ca_file = ca_file or os.environ.get("DDRUN_CA_FILE") or None
        self._ssl = ssl.create_default_context(cafile=ca_file) if ca_file else None

    def _request(self, method, path, body=None, content_type=None, query=None):
        url = self.url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        req = urllib.request.Request(url, data=body, method=method)
        if content_type:
            req.add_header("Content-Type", content_type)
        if self._token:
            req.add_header("Authorization", "Bearer " + self._token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._ssl) as resp:
                return resp.read()
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                msg = json.loads(raw.decode("utf-8"))["error"]
            except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                msg = raw.decode("utf-8", "replace").strip() or e.reason
            raise Error(msg, e.code) from None
        except urllib.error.URLError as e:
            raise Error("{}: {}".format(self.url, e.reason)) from None

    def _json(self, method, path, **kw):
        return json.loads(self._request(method, path, **kw).decode("utf-8"))

    def submit(self, model, format=None, **settings):
        """Submit a model (a path, or the file's bytes) with solve's settings
        (``algo``, ``max_iter``, ``time_limit`` e.g. ``"30s"`` or seconds,
        ``tol``, ``threads``, ``exact``, ``tighten``, ``workers``, ...);
        returns the job id. Only the settings given are sent: the others
        are the service's defaults, those of solve (docs/defaults.md)."""
        if isinstance(model, (bytes, bytearray, memoryview)):
            data = bytes(model)
        else:
            with open(os.fspath(model), "rb") as f:
                data = f.read()
            format = format or _format_of(model)
        query = {k: _setting(v) for k, v in settings.items()}
        if "time_limit" in settings and isinstance(settings["time_limit"], (int, float)) \
                and not isinstance(settings["time_limit"], bool):
            query["time_limit"] = "{}s".format(settings["time_limit"])
        if format:
            query["format"] = format
        st = self._json("POST", "/v1/jobs", body=data, content_type=_CONTENT_TYPES.get(format, "application/octet-stream"),
                        query=query)
        return st["id"]

    def status(self, job_id):
        """The job's status: id, state, iteration, dual, primal, gap, workers, eta_seconds, ..."""
        return self._json("GET", "/v1/jobs/" + urllib.parse.quote(job_id, safe=""))

    def jobs(self):
        """Every job's status, oldest first."""
        return self._json("GET", "/v1/jobs")["jobs"]

    def result(self, job_id, format="json"):
        """A finished job's result: a dict (``solve --json``'s object), or with
        ``format="uai"`` the assignment as UAI MPE text."""
        path = "/v1/jobs/" + urllib.parse.quote(job_id, safe="") + "/result"
        if format == "uai":
            return self._request("GET", path, query={"format": "uai"}).decode("utf-8")
        return self._json("GET", path)

    def trace(self, job_id):
        """The job's convergence trace so far, as a list of dicts (numbers as
        int or float; infinities as float('inf'))."""
        text = self._request("GET", "/v1/jobs/" + urllib.parse.quote(job_id, safe="") + "/trace").decode("utf-8")
        rows = []
        for rec in csv.DictReader(io.StringIO(text)):
            rows.append({k: (int(v) if k in ("iteration", "nodes") else float(v)) for k, v in rec.items()})
        return rows

    def cancel(self, job_id):
        """Cancel a queued or running job; returns its status."""
        return self._json("DELETE", "/v1/jobs/" + urllib.parse.quote(job_id, safe=""))

    def wait(self, job_id, progress=True, poll=0.2, timeout=None):
        """Wait until the job is done, failed or cancelled, drawing its
        progress on stderr (a bar on a terminal, a line per second
        otherwise; ``progress=False``: nothing). Returns its status."""
        bar = _Progress(sys.stderr) if progress else None
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                st = self.status(job_id)
                if bar:
                    bar.update(st)
                if st["state"] in _FINAL:
                    return st
                if deadline is not None and time.monotonic() > deadline:
                    raise Error("job {}: still {} after {}s".format(job_id, st["state"], timeout))
                time.sleep(poll)
        finally:
            if bar:
                bar.close()

    def solve(self, model, progress=True, format=None, **settings):
        """Submit, wait (see wait) and return the :class:`Solution`. A
        KeyboardInterrupt cancels the job. A failed job raises Error."""
        job_id = self.submit(model, format=format, **settings)
        try:
            st = self.wait(job_id, progress=progress)
        except KeyboardInterrupt:
            try:
                self.cancel(job_id)
            finally:
                raise
        if st["state"] == "failed":
            raise Error("job {} failed: {}".format(job_id, st.get("error", "")), 0)
        return Solution(job_id, st["state"], self.result(job_id), self.trace(job_id))


def _num(v):
    return "-" if v is None else "{:.6g}".format(v)


def _fraction(st, it):
    """How far a running job is, from its own limits: the max_iter it was
    given, else the service's estimate of the time left (eta_seconds, from
    the limits the service settled: docs/defaults.md); 0 when neither is
    known. The client keeps no default of its own."""
    given = st.get("params", {}).get("max_iter")
    if given:
        return min(1.0, it / max(1, int(given)))
    eta, secs = st.get("eta_seconds"), st.get("seconds") or 0.0
    if eta is not None and secs + eta > 0:
        return min(1.0, secs / (secs + eta))
    return 0.0


class _Progress:
    """A progress bar on a terminal, plain lines (at most one a second)
    otherwise."""

    def __init__(self, out, width=30):
        self.out = out
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.width = width
        self.last = 0.0
        self.drawn = False

    def update(self, st):
        it = st.get("iteration") or 0
        eta = st.get("eta_seconds")
        text = "{} {} iter {} dual {} primal {} gap {}{}".format(
            st["id"], st["state"], it, _num(st.get("dual")), _num(st.get("primal")), _num(st.get("gap")),
            "" if eta is None else " eta {:.0f}s".format(eta))
        if self.tty:
            frac = 1.0 if st["state"] in _FINAL else _fraction(st, it)
            n = int(frac * self.width)
            self.out.write("\r[" + "#" * n + "." * (self.width - n) + "] " + text + "\x1b[K")
            self.drawn = True
        else:
            now = time.monotonic()
            if now - self.last < 1.0 and st["state"] not in _FINAL:
                return
            self.last = now
            self.out.write(text + "\n")
        self.out.flush()

    def close(self):
        if self.tty and self.drawn:
            self.out.write("\n")
            self.out.flush()


def grid_model(unaries, pairwise):
    """A grid model in ddrun's JSON format (bytes, for Client.submit or
    solve) from numpy arrays: ``unaries`` of shape (H, W, L), the score of
    each label at each pixel, and ``pairwise`` either a scalar (a Potts
    weight: that score when 4-neighbours agree) or an (L, L) array of
    scores for each pair of labels of 4-neighbours (left/up variable
    first). Scores are maximised.

    Needs numpy: without it, an ImportError that says so."""
    try:
        import numpy as np
    except ImportError:
        raise ImportError("ddrun.grid_model needs numpy (pip install numpy); the rest of ddrun works without it") from None
    u = np.asarray(unaries, dtype=float)
    if u.ndim != 3:
        raise ValueError("unaries: want shape (H, W, L), got {}".format(u.shape))
    h, w, labels = u.shape
    if not np.all(np.isfinite(u)):
        raise ValueError("unaries: not all finite")
    p = np.asarray(pairwise, dtype=float)
    if p.ndim == 0:
        factor = {"kind": "potts", "weight": float(p)}
    elif p.shape == (labels, labels):
        factor = {"kind": "dense", "table": [float(x) for x in p.reshape(-1)]}
    else:
        raise ValueError("pairwise: want a scalar or shape ({0}, {0}), got {1}".format(labels, p.shape))
    factors = []
    for i in range(h):
        for j in range(w):
            v = i * w + j
            if j + 1 < w:
                factors.append(dict(factor, vars=[v, v + 1]))
            if i + 1 < h:
                factors.append(dict(factor, vars=[v, v + w]))
    doc = {"format": "ddrun-model", "version": 1, "cards": [labels] * (h * w), "constant": 0,
           "unaries": u.reshape(h * w, labels).tolist(), "factors": factors}
    if any(math.isinf(x) for x in factor.get("table", [])):
        raise ValueError("pairwise: not all finite")
    return json.dumps(doc).encode("utf-8")
