// Package rollout is what an operator uses to roll out a policy change
// without fear (docs/rollout.md): the comparison of two compiled configs
// (Compare, per catalog tool or per server as written, each change marked
// as loosening or tightening in the loader's strictness order), and the
// recording of decided calls (Recorder) that `mcpx-policy replay` decides
// again. It holds no OPA type and evaluates nothing: the SDK computes each
// config's facts with the policy and hands them over as a Snapshot.
package rollout
