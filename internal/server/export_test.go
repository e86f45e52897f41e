package server

// InFlight is the number of requests holding a slot of h's MaxInFlight:
// what TestInFlightBounded waits for instead of guessing from answers.
func InFlight(h *Handler) int { return len(h.slots) }
