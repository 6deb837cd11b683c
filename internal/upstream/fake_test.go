package upstream

import "github.com/toolhost/toolhost/internal/upstream/upstreamtest"

// Short names for the fixtures used throughout this package's tests.
var (
	fakeMCP       = upstreamtest.FakeMCP
	freeAddr      = upstreamtest.FreeAddr
	startHTTPFake = upstreamtest.StartHTTPFake
	writeConfigs  = upstreamtest.WriteConfigs
	writePolicy   = upstreamtest.WritePolicy
)
