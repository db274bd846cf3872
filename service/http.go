package service

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// apiError is an error with its HTTP status.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errNotFound(id string) error {
	return &apiError{http.StatusNotFound, fmt.Sprintf("job %q: no such job", id)}
}

func errUnavailable(msg string) error { return &apiError{http.StatusServiceUnavailable, msg} }

// errNotReady is the answer for the result of a job that has none (yet).
func errNotReady(st Status) error {
	msg := fmt.Sprintf("job %s is %s: no result yet", st.ID, st.State)
	switch {
	case st.State == Failed:
		msg = fmt.Sprintf("job %s failed: %s", st.ID, st.Error)
	case st.State.final():
		msg = fmt.Sprintf("job %s is %s and has no result", st.ID, st.State)
	}
	return &apiError{http.StatusConflict, msg}
}

// code is the HTTP status of err.
func code(err error) int {
	var ae *apiError
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae.code
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, new(InvalidError)):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// route is one operation of the HTTP API; open ones need no token.
type route struct {
	method, path string
	handle       func(s *Service, w http.ResponseWriter, r *http.Request)
	open         bool
}

// routes are the HTTP API; docs/openapi.yaml describes each (a test checks).
var routes = []route{
	{"POST", "/v1/jobs", (*Service).httpSubmit, false},
	{"GET", "/v1/jobs", (*Service).httpList, false},
	{"GET", "/v1/jobs/{id}", (*Service).httpGet, false},
	{"DELETE", "/v1/jobs/{id}", (*Service).httpCancel, false},
	{"GET", "/v1/jobs/{id}/result", (*Service).httpResult, false},
	{"GET", "/v1/jobs/{id}/trace", (*Service).httpTrace, false},
	{"GET", "/healthz", (*Service).httpHealth, true},
	{"GET", "/readyz", (*Service).httpReady, true},
}

// Routes are the method and path of every route Handler serves.
func Routes() []string {
	out := make([]string, len(routes))
	for i, r := range routes {
		out[i] = r.method + " " + r.path
	}
	return out
}

// Handler is the HTTP API: every route of the service on one mux (the
// place to add others, such as /metrics). Every route but /healthz and
// /readyz needs a token (RequireToken); so does a route that does not
// exist, so that a stranger learns nothing of the API.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.handle(s, w, r) })
		if !rt.open {
			h = s.RequireToken(h)
		}
		mux.Handle(rt.method+" "+rt.path, h)
	}
	mux.Handle("/", s.RequireToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{http.StatusNotFound, fmt.Sprintf("%s %s: no such route", r.Method, r.URL.Path)})
	})))
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, code(err), map[string]string{"error": err.Error()})
}

// contentTypes map a request's Content-Type to a format; other types (none,
// application/octet-stream, curl's form default) are sniffed.
var contentTypes = map[string]string{
	"text/plain": "uai", "application/gzip": "uai.gz", "application/x-gzip": "uai.gz",
	"application/json": "json", "application/msgpack": "msgpack", "application/x-msgpack": "msgpack",
	"application/vnd.msgpack": "msgpack",
}

// sniff guesses the format from the first bytes: gzip's magic, a JSON
// object, a msgpack map, else UAI text.
func sniff(b []byte) string {
	switch {
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b:
		return "uai.gz"
	case len(b) > 0 && b[0] == '{':
		return "json"
	case len(b) > 0 && (b[0]&0xf0 == 0x80 || b[0] == 0xde || b[0] == 0xdf):
		return "msgpack"
	}
	return "uai"
}

func (s *Service) httpSubmit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	body := bufio.NewReader(http.MaxBytesReader(w, r.Body, s.opts.MaxUpload))
	// A submission refused before its body is read (a bad parameter)
	// reads the rest, within the upload bound, so that the client,
	// still sending, gets its answer rather than a reset connection.
	defer io.Copy(io.Discard, body)
	params, err := ParseParams(q, s.opts.Params)
	if err != nil {
		writeError(w, err)
		return
	}
	format := q.Get("format")
	if format == "" {
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if format = contentTypes[ct]; format == "" {
			head, _ := body.Peek(2)
			format = sniff(head)
		}
	}
	st, err := s.Submit(r.Context(), body, format, params)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+st.ID)
	writeJSON(w, http.StatusCreated, st)
}

func (s *Service) httpList(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"jobs": s.List()})
}

// id is the request's job id; a malformed one is unknown (404).
func id(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		writeError(w, errNotFound(id))
		return "", false
	}
	return id, true
}

func (s *Service) httpGet(w http.ResponseWriter, r *http.Request) {
	answerStatus(w, r, http.StatusOK, s.Get)
}

func (s *Service) httpCancel(w http.ResponseWriter, r *http.Request) {
	answerStatus(w, r, http.StatusAccepted, s.Cancel)
}

// answerStatus applies op (Get, Cancel) to the request's job and answers
// the job's status with code, or op's error.
func answerStatus(w http.ResponseWriter, r *http.Request, code int, op func(string) (Status, error)) {
	if id, ok := id(w, r); ok {
		st, err := op(id)
		if err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, code, st)
	}
}

// resultFormat checks a result request's format: json (default) or uai.
func resultFormat(f string) (mpe bool, err error) {
	switch f {
	case "", "json":
		return false, nil
	case "uai":
		return true, nil
	}
	return false, Invalid(fmt.Errorf("query parameter format=%q: want json or uai", f))
}

func (s *Service) httpResult(w http.ResponseWriter, r *http.Request) {
	id, ok := id(w, r)
	if !ok {
		return
	}
	mpe, err := resultFormat(r.URL.Query().Get("format"))
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := s.Result(id, mpe)
	if err != nil {
		writeError(w, err)
		return
	}
	if mpe {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	_, _ = w.Write(b)
}

func (s *Service) httpTrace(w http.ResponseWriter, r *http.Request) {
	if id, ok := id(w, r); ok {
		b, err := s.Trace(id)
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		_, _ = w.Write(b)
	}
}

func (s *Service) httpHealth(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Service) httpReady(w http.ResponseWriter, _ *http.Request) {
	if err := s.ready(); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Service) ready() error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("the service is stopping")
	}
	if s.opts.Ready != nil {
		return s.opts.Ready()
	}
	return nil
}
