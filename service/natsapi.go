package service

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Subjects of the API over NATS request/reply: SubjectPrefix followed by
// one of submit, list, get, result, trace or cancel. Requests and replies
// are JSON (NATSRequest, NATSReply), the model in a submit base64 in the
// JSON, bounded by the server's max payload (1 MiB by default).
const SubjectPrefix = "ddrun.api.jobs."

// QueueGroup is the NATS queue group of the services: each request is
// answered by one of them.
const QueueGroup = "ddrun-api"

// NATSRequest is the body of a request. Token is an API token (as the
// HTTP API's bearer token): without a valid one the reply is a 401 and
// nothing changes. ID names the job (get, result, trace, cancel); Model,
// Format and Params are a submit's (as the HTTP body, ?format= and the
// other query parameters); Format is also a result's (json or uai).
// Nonce and Sent (Unix milliseconds) make a submit unique: required when
// requests are sealed, optional otherwise (a submit with a nonce is held
// to the same rules); a second copy of the request (a replay, a retry)
// gets the job the first created, with code 200 instead of 201, and one
// sent longer than NonceWindow ago is refused.
type NATSRequest struct {
	Token  string            `json:"token,omitempty"`
	Nonce  string            `json:"nonce,omitempty"`
	Sent   int64             `json:"sent,omitempty"`
	ID     string            `json:"id,omitempty"`
	Format string            `json:"format,omitempty"`
	Params map[string]string `json:"params,omitempty"`
	Model  []byte            `json:"model,omitempty"`
}

// NATSReply is the body of a reply: Code is the HTTP status the same
// request would get, Error its message; Body the JSON the HTTP API answers
// (a job's status, {"jobs": [...]}, a result), Text the CSV of a trace or
// the UAI MPE text of a result.
type NATSReply struct {
	Code  int             `json:"code"`
	Error string          `json:"error,omitempty"`
	Body  json.RawMessage `json:"body,omitempty"`
	Text  string          `json:"text,omitempty"`
}

// Sealer seals and opens message bodies by subject (transport.Sealed with
// the job key): with one, requests must be sealed on their subject and
// replies are sealed on the request's subject followed by ".reply".
type Sealer interface {
	Seal(subject string, data []byte) ([]byte, error)
	Open(subject string, msg []byte) ([]byte, error)
}

// ServeNATS answers the API's requests on nc until the returned function is
// called (or the service is closed). With seal, bodies are sealed.
func (s *Service) ServeNATS(nc *nats.Conn, seal Sealer) (stop func(), err error) {
	sub, err := nc.QueueSubscribe(SubjectPrefix+"*", QueueGroup, func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		rep := s.natsHandle(m.Subject, m.Data, seal)
		b, _ := json.Marshal(rep)
		if seal != nil {
			if b, err = seal.Seal(m.Subject+".reply", b); err != nil {
				s.log.Warn("sealing an API reply", "err", err)
				return
			}
		}
		if err := m.Respond(b); err != nil {
			s.log.Warn("answering an API request", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s*: %w", SubjectPrefix, err)
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// natsHandle answers one request.
func (s *Service) natsHandle(subject string, data []byte, seal Sealer) NATSReply {
	fail := func(err error) NATSReply { return NATSReply{Code: code(err), Error: err.Error()} }
	if seal != nil {
		var err error
		if data, err = seal.Open(subject, data); err != nil {
			s.log.Warn("an API request that does not open with the job key", "subject", subject)
			return fail(Invalid(errors.New("request does not open with the job key")))
		}
	}
	var req NATSRequest
	if len(bytes.TrimSpace(data)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return fail(Invalid(fmt.Errorf("request body: %w", err)))
		}
	}
	client, err := s.authorize([]byte(req.Token))
	if err != nil {
		s.refused("API request over NATS refused: no valid token", "subject", subject)
		return fail(err)
	}
	op := strings.TrimPrefix(subject, SubjectPrefix)
	if op != "submit" && op != "list" && !validID(req.ID) {
		return fail(errNotFound(req.ID))
	}
	var v any
	switch op {
	case "submit":
		if seal != nil || req.Nonce != "" {
			return s.natsSubmitOnce(client, &req)
		}
		return s.natsSubmit(client, &req)
	case "list":
		v = map[string]any{"jobs": s.List()}
	case "get":
		v, err = s.Get(req.ID)
	case "cancel":
		if v, err = s.Cancel(req.ID); err == nil {
			b, _ := json.Marshal(v)
			return NATSReply{Code: http.StatusAccepted, Body: b}
		}
	case "result":
		var mpe bool
		var b []byte
		if mpe, err = resultFormat(req.Format); err == nil {
			if b, err = s.Result(req.ID, mpe); err == nil {
				if mpe {
					return NATSReply{Code: http.StatusOK, Text: string(b)}
				}
				return NATSReply{Code: http.StatusOK, Body: b}
			}
		}
	case "trace":
		var b []byte
		if b, err = s.Trace(req.ID); err == nil {
			return NATSReply{Code: http.StatusOK, Text: string(b)}
		}
	default:
		err = &apiError{http.StatusNotFound, fmt.Sprintf("subject %s: no such operation (want submit, list, get, result, trace or cancel)", subject)}
	}
	if err != nil {
		return fail(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fail(err)
	}
	return NATSReply{Code: http.StatusOK, Body: b}
}

// natsSubmit submits req's model for client.
func (s *Service) natsSubmit(client string, req *NATSRequest) NATSReply {
	if req.Format == "" {
		req.Format = sniff(req.Model)
	}
	ctx, cancel := context.WithTimeout(withClient(s.ctx, client), time.Minute)
	defer cancel()
	allowed, err := checkParams(req.Params, s.opts.Params)
	var st Status
	if err == nil {
		st, err = s.Submit(ctx, bytes.NewReader(req.Model), req.Format, allowed)
	}
	if err != nil {
		return NATSReply{Code: code(err), Error: err.Error()}
	}
	b, _ := json.Marshal(st)
	return NATSReply{Code: http.StatusCreated, Body: b}
}

// natsSubmitOnce is natsSubmit for a request with a nonce (nonce.go): a
// copy of a request already taken gets its job (200), not a new one.
func (s *Service) natsSubmitOnce(client string, req *NATSRequest) NATSReply {
	id, err := s.nonces.claim(client, req.Nonce, req.Sent, time.Now())
	if err == nil && id == "" && s.opts.Nonces != nil {
		if id, err = s.claimShared(client, req.Nonce); err != nil || id != "" {
			s.nonces.done(client, req.Nonce, "") // another service's, or still open
		}
	}
	if err == nil && id != "" {
		s.refused("a repeated API submit over NATS answered with the job it created", "client", client, "job", id)
		var st Status
		if st, err = s.Get(id); err == nil {
			b, _ := json.Marshal(st)
			return NATSReply{Code: http.StatusOK, Body: b}
		}
		err = &apiError{http.StatusConflict, fmt.Sprintf("this submit (its nonce) created job %s on another service of the cluster", id)}
	}
	if err != nil {
		s.refused("API submit over NATS refused", "client", client, "err", err)
		return NATSReply{Code: code(err), Error: err.Error()}
	}
	rep := s.natsSubmit(client, req)
	created := ""
	if rep.Code == http.StatusCreated {
		var st Status
		if json.Unmarshal(rep.Body, &st) == nil {
			created = st.ID
		}
	}
	s.nonces.done(client, req.Nonce, created)
	if s.opts.Nonces != nil {
		s.doneShared(client, req.Nonce, created)
	}
	return rep
}

// checkParams checks a NATS submit's parameters as ParseParams checks a
// query's.
func checkParams(p map[string]string, allowed []string) (map[string]string, error) {
	q := map[string][]string{}
	for k, v := range p {
		q[k] = []string{v}
	}
	return ParseParams(q, allowed)
}
