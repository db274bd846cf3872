package transport

import (
	"fmt"
	"strings"
)

// Subjects. Everything of a job lives under "ddrun.<job>."; only worker
// registration, which happens before a worker has a job, is global:
//
//	ddrun.control                      Hello                   workers -> coordinator(s)
//	ddrun.<job>.assign.<worker>        Assign                  coordinator -> one worker
//	ddrun.<job>.step                   Step                    coordinator -> all workers of the job
//	ddrun.<job>.report.<worker>        Report                  worker -> coordinator (subscribes report.*)
//	ddrun.<job>.heartbeat.<worker>     Heartbeat               worker -> coordinator (subscribes heartbeat.*)
//
// Job ids and worker names must be ValidNames, so each is exactly one
// subject token. The helpers below do not check; Encode checks the names
// in a header, and Publish and Subscribe reject malformed subjects.
const (
	// SubjectRoot is the first token of every subject of this package.
	SubjectRoot = "ddrun"
	// ControlSubject carries worker registration (Hello) for all jobs.
	ControlSubject = SubjectRoot + ".control"
)

// StepSubject is where the coordinator of job broadcasts Steps.
func StepSubject(job string) string { return SubjectRoot + "." + job + ".step" }

// AssignSubject is where worker receives its Assign for job.
func AssignSubject(job, worker string) string {
	return SubjectRoot + "." + job + ".assign." + worker
}

// ReportSubject is where worker sends its Reports for job.
func ReportSubject(job, worker string) string {
	return SubjectRoot + "." + job + ".report." + worker
}

// ReportsWildcard matches the Reports of every worker of job.
func ReportsWildcard(job string) string { return SubjectRoot + "." + job + ".report.*" }

// HeartbeatSubject is where worker sends its Heartbeats for job.
func HeartbeatSubject(job, worker string) string {
	return SubjectRoot + "." + job + ".heartbeat." + worker
}

// HeartbeatsWildcard matches the Heartbeats of every worker of job.
func HeartbeatsWildcard(job string) string { return SubjectRoot + "." + job + ".heartbeat.*" }

// JobWildcard matches every subject of job.
func JobWildcard(job string) string { return SubjectRoot + "." + job + ".>" }

// ValidName reports whether s can be a job id or worker name: 1 to
// MaxNameLen bytes of ASCII letters, digits, '-' and '_'.
func ValidName(s string) error {
	if s == "" {
		return fmt.Errorf("empty name")
	}
	if len(s) > MaxNameLen {
		return fmt.Errorf("name of %d bytes, longer than %d", len(s), MaxNameLen)
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return fmt.Errorf("name %q: byte %q at %d is not a letter, digit, '-' or '_'", s, s[i], i)
		}
	}
	return nil
}

func nameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_'
}

// SanitizeName maps s to a ValidName: disallowed bytes become '_', an empty
// s becomes "_", and the result is cut to MaxNameLen bytes. Use it to turn
// host names like "node1.example.org" into worker names.
func SanitizeName(s string) string {
	if s == "" {
		return "_"
	}
	b := []byte(s)
	if len(b) > MaxNameLen {
		b = b[:MaxNameLen]
	}
	for i, c := range b {
		if !nameByte(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// checkSubject validates a NATS-style subject: non-empty dot-separated
// tokens without whitespace; with wildcards, a token may be "*" and the last
// one ">".
func checkSubject(s string, wildcards bool) error {
	if s == "" {
		return fmt.Errorf("transport: empty subject")
	}
	if len(s) > 1024 {
		return fmt.Errorf("transport: subject of %d bytes is too long", len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("transport: subject %q has a space or control byte", s)
		}
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return fmt.Errorf("transport: subject %q has an empty token", s)
		case t == "*" || t == ">":
			if !wildcards {
				return fmt.Errorf("transport: cannot publish to wildcard subject %q", s)
			}
			if t == ">" && i != len(toks)-1 {
				return fmt.Errorf("transport: subject %q: '>' must be the last token", s)
			}
		case strings.ContainsAny(t, "*>"):
			return fmt.Errorf("transport: subject %q: '*' and '>' must be whole tokens", s)
		}
	}
	return nil
}

// matchSubject reports whether a literal subject matches pattern, with NATS
// semantics: "*" matches one token, a final ">" one or more.
func matchSubject(pattern, subject string) bool {
	for {
		pt, prest, pmore := strings.Cut(pattern, ".")
		if pt == ">" {
			return subject != ""
		}
		st, srest, smore := strings.Cut(subject, ".")
		if pt != "*" && pt != st {
			return false
		}
		if !pmore || !smore {
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}
