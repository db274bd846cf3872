package natsflags

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

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
type JobKey struct {
	File string
	text string // the keys as given, once loaded
}

// Register adds --job-key-file to fs.
func (k *JobKey) Register(fs *flag.FlagSet) {
	fs.StringVar(&k.File, "job-key-file", "", "`FILE` with the job key (hex or base64, e.g. from openssl rand -hex 32; default $"+JobKeyEnv+
		"): messages are sealed with it, and those that do not open with it are dropped")
}

// Wrap returns tr sealed with the key from --job-key-file or $DDRUN_JOB_KEY,
// or tr itself when neither is given; close releases the wrapper (not tr).
// log (nil: none) gets the key's id and the warnings about messages that
// do not open.
func (k *JobKey) Wrap(tr transport.Transport, log *slog.Logger) (sealed transport.Transport, close func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	text := os.Getenv(JobKeyEnv)
	from := "$" + JobKeyEnv
	if k.File != "" {
		b, err := os.ReadFile(k.File)
		if err != nil {
			return nil, nil, fmt.Errorf("--job-key-file %s: %w", k.File, errors.Unwrap(err))
		}
		text, from = string(b), "--job-key-file"
	}
	if strings.TrimSpace(text) == "" {
		if k.File != "" {
			return nil, nil, errors.New("--job-key-file: empty")
		}
		return tr, func() {}, nil
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

// Env is the environment entry that gives child processes the key Wrap
// loaded (nil when there was none).
func (k *JobKey) Env() []string {
	if k.text == "" {
		return nil
	}
	return []string{JobKeyEnv + "=" + strings.Join(strings.Fields(strings.ReplaceAll(k.text, ",", " ")), ",")}
}
