package consensus

// PolishRuns is how many final polishes the process has run.
func PolishRuns() int64 { return polishRuns.Load() }
