package natsflags

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/ddrun/ddrun/checkpoint"
	"github.com/ddrun/ddrun/transport"
)

// JobKeyEnv is the environment variable that holds the job key when no
// --job-key-file is given. `coordinator run --local` hands the key to its
// workers through it, never on their command line.
const JobKeyEnv = "DDRUN_JOB_KEY"

// JobKey is the job key of a command line: the shared secret with which
// every message of the job protocol is sealed (transport.Sealed), written
// in hex or base64, several separated by commas during a rotation (the
// first seals, all open).
//
// A job is authenticated by default: without a key, Wrap generates one when
// the process hands it to every worker itself (Generate: `run --local`),
// and otherwise refuses (ErrNoKey) unless Insecure (--insecure) says that
// the job runs unsealed, with a warning.
type JobKey struct {
	File string
	// Insecure (--insecure) runs without a key: anyone who can publish
	// on the NATS server can change the job's course and result.
	Insecure bool
	// Generate, when no key is given, draws a random one (for workers
	// this process starts and hands it to, Env).
	Generate bool
	text     string // the keys as given, once loaded
}

// ErrNoKey is Wrap's error when no key is given and neither Generate nor
// Insecure allows that; its text says how to get a key.
var ErrNoKey = errors.New("no job key: messages would be unauthenticated; give every process of the job the same key " +
	"(openssl rand -hex 32 > job.key; --job-key-file job.key or $" + JobKeyEnv + "), or pass --insecure (docs/security.md)")

// InsecureWarning is what an insecure job says at start (and its result
// says "insecure": true).
const InsecureWarning = "insecure: no job key, messages are not authenticated: any client of the NATS server can change the job's course and result (docs/security.md)"

// Register adds --job-key-file and --insecure to fs.
func (k *JobKey) Register(fs *flag.FlagSet) {
	fs.StringVar(&k.File, "job-key-file", "", "`FILE` with the job key (hex or base64, e.g. from openssl rand -hex 32; default $"+JobKeyEnv+
		"): messages are sealed with it, and those that do not open with it are dropped")
	fs.BoolVar(&k.Insecure, "insecure", false, "run without a job key (ignoring $"+JobKeyEnv+
		"): messages are not authenticated, and any client of the NATS server can change the job's result")
}

// Wrap returns tr sealed with the key from --job-key-file or $DDRUN_JOB_KEY,
// or one it generates (Generate), or, with Insecure, tr itself; close
// releases the wrapper (not tr). Without a key, Generate or Insecure it
// fails with ErrNoKey. log (nil: none) gets the key's id, the insecure
// warning and the warnings about messages that do not open.
func (k *JobKey) Wrap(tr transport.Transport, log *slog.Logger) (sealed transport.Transport, close func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if k.Insecure {
		if k.File != "" {
			return nil, nil, errors.New("--insecure with --job-key-file: give one")
		}
		log.Warn(InsecureWarning)
		return tr, func() {}, nil
	}
	text, from, err := k.given()
	if err != nil {
		return nil, nil, err
	}
	if strings.TrimSpace(text) == "" {
		switch {
		case k.File != "":
			return nil, nil, errors.New("--job-key-file: empty")
		case !k.Generate:
			return nil, nil, ErrNoKey
		}
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, fmt.Errorf("generating a job key: %w", err)
		}
		text, from = hex.EncodeToString(b[:]), "the generated key"
	}
	keys, err := transport.ParseKeys(text)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", from, err)
	}
	s, err := transport.NewSealed(tr, transport.SealOptions{Keys: keys, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", from, err)
	}
	k.text = text
	log.Info("messages sealed with the job key", "key_id", fmt.Sprintf("%02x", transport.KeyID(keys[0])))
	return s, func() { _ = s.Close() }, nil
}

// given is the key text of --job-key-file or $DDRUN_JOB_KEY ("" when
// none) and where it came from.
func (k *JobKey) given() (text, from string, err error) {
	if k.File == "" {
		return os.Getenv(JobKeyEnv), "$" + JobKeyEnv, nil
	}
	b, err := os.ReadFile(k.File)
	if err != nil {
		return "", "", fmt.Errorf("--job-key-file %s: %w", k.File, errors.Unwrap(err))
	}
	return string(b), "--job-key-file", nil
}

// CheckpointSealer is the sealer of a job's checkpoint blobs
// (checkpoint.NewSealer) with the keys given (--job-key-file or
// $DDRUN_JOB_KEY), or nil: under Insecure, and when none is given (a key
// Wrap generates for --local seals no checkpoint, since the next run,
// with another key, could not resume from it).
func (k *JobKey) CheckpointSealer() (*checkpoint.Sealer, error) {
	if k.Insecure {
		return nil, nil
	}
	text, from, err := k.given()
	if err != nil || strings.TrimSpace(text) == "" {
		return nil, err
	}
	keys, err := transport.ParseKeys(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return checkpoint.NewSealer(keys)
}

// Env is the environment entry that gives child processes the key Wrap
// loaded (nil when there was none).
func (k *JobKey) Env() []string {
	if k.text == "" {
		return nil
	}
	return []string{JobKeyEnv + "=" + strings.Join(strings.Fields(strings.ReplaceAll(k.text, ",", " ")), ",")}
}
