package runtime

import "context"

// For the external tests (package runtime_test).

// RepairNetworksNow runs the start-up repair of unfinished sandbox networks.
func (r *Runtime) RepairNetworksNow(ctx context.Context) { r.repairNetworks(ctx) }
