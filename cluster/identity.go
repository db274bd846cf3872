package cluster

import (
	"encoding/hex"
	"encoding/json"

	"github.com/ddrun/ddrun/consensus"
)

// Identity is what a checkpoint may be resumed with: the same model and
// evidence, and the same settings that change the iterates. A checkpoint
// records it (CheckpointMeta), and so does a Raft group's job state.
type Identity struct {
	// ModelHash is the lower-case hex of a sha256 over the model file's
	// bytes, a 0 byte, and the evidence file's bytes and a 0 byte when
	// there is one (see modelfile.LoadTee).
	ModelHash string
	// Settings is the JSON of the options that change the iterates and
	// the number of workers.
	Settings json.RawMessage
}

// NewIdentity returns the identity of a job whose model and evidence files
// hash to fileHash (the raw sha256 sum), solved with opts on workers
// workers.
func NewIdentity(fileHash []byte, opts consensus.Options, workers int) (Identity, error) {
	settings, err := json.Marshal(struct {
		Algo        consensus.Algo          `json:"algo"`
		Slaves      consensus.Decomposition `json:"slaves"`
		Step        consensus.StepRule      `json:"step"`
		Eta         float64                 `json:"eta"`
		AdaptEta    bool                    `json:"adapt_eta"`
		Tau         float64                 `json:"tau"`
		Tol         float64                 `json:"tol"`
		ResidualTol float64                 `json:"residual_tol"`
		MaxIter     int                     `json:"max_iter"`
		Workers     int                     `json:"workers"`
	}{opts.Algo, opts.Slaves, opts.Step, opts.Eta, opts.AdaptEta, opts.Tau, opts.Tol, opts.ResidualTol, opts.MaxIter, workers})
	if err != nil {
		return Identity{}, err
	}
	return Identity{ModelHash: hex.EncodeToString(fileHash), Settings: settings}, nil
}
