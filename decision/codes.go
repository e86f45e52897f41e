package decision

// Code is a reason code. The set is closed: Codes lists every one, and each
// has a page in docs/reasons/.
type Code string

// The closed set of reason codes; each has its page in docs/reasons/.
const (
	HiddenTool                   Code = "HiddenTool"
	UnknownOutcomePending        Code = "UnknownOutcomePending"
	UnknownArguments             Code = "UnknownArguments"
	ArgumentRuleViolation        Code = "ArgumentRuleViolation"
	WriteDenied                  Code = "WriteDenied"
	WriteNeedsConfirmation       Code = "WriteNeedsConfirmation"
	DestructiveNeedsConfirmation Code = "DestructiveNeedsConfirmation"
	OverrideDeny                 Code = "OverrideDeny"
	OverrideAsk                  Code = "OverrideAsk"
	IgnoredArguments             Code = "IgnoredArguments"
	InvalidInput                 Code = "InvalidInput"
	PolicyError                  Code = "PolicyError"
	LedgerUnreadable             Code = "LedgerUnreadable"
	ConfirmationUnavailable      Code = "ConfirmationUnavailable"
	ConfirmationDeclined         Code = "ConfirmationDeclined"
	ToolDefinitionChanged        Code = "ToolDefinitionChanged"
	ConfigLoosened               Code = "ConfigLoosened"
	WriteBudgetExceeded          Code = "WriteBudgetExceeded"
	RepeatedCall                 Code = "RepeatedCall"
	FlowDenied                   Code = "FlowDenied"
	FlowNeedsConfirmation        Code = "FlowNeedsConfirmation"
)

// CodeInfo is the one place a code's title, step, effect and doc page are
// declared.
type CodeInfo struct {
	Code    Code
	Title   string
	Step    Step
	Outcome Outcome // the effect of the finding; "" for a warning
	Doc     string  // path of the code's page, relative to the repository root
}

// Codes is the closed set, in check order.
var Codes = []CodeInfo{
	{ToolDefinitionChanged, "The tool's definition is not the one pinned", StepPin, Deny, ""},
	{HiddenTool, "The tool is hidden", StepHidden, Deny, ""},
	{UnknownOutcomePending, "An earlier write's outcome is unknown", StepLedger, Deny, ""},
	{LedgerUnreadable, "The ledger cannot be read", StepLedger, Deny, ""},
	{WriteBudgetExceeded, "A write budget is spent for now", StepBudget, Deny, ""},
	{RepeatedCall, "The same call was repeated too often", StepBudget, Deny, ""},
	{FlowDenied, "A data-flow rule denies the call in this session", StepFlow, Deny, ""},
	{FlowNeedsConfirmation, "A data-flow rule asks before the call in this session", StepFlow, Ask, ""},
	{UnknownArguments, "The call has arguments the tool does not declare", StepUnknownArgs, Deny, ""},
	{IgnoredArguments, "Arguments the tool does not declare were passed on", StepUnknownArgs, "", ""},
	{ArgumentRuleViolation, "An argument rule rejects the arguments", StepArgumentRules, Deny, ""},
	{WriteDenied, "Writes to this server are denied", StepWriteMode, Deny, ""},
	{WriteNeedsConfirmation, "Writes to this server need confirmation", StepWriteMode, Ask, ""},
	{DestructiveNeedsConfirmation, "A destructive write needs confirmation", StepDestructiveFloor, Ask, ""},
	{OverrideDeny, "An operator override denies the call", StepOverrides, Deny, ""},
	{OverrideAsk, "An operator override asks for confirmation", StepOverrides, Ask, ""},
	{InvalidInput, "The call is malformed", StepInput, Deny, ""},
	{PolicyError, "The policy could not decide", StepInput, Deny, ""},
	{ConfigLoosened, "A later config layer loosened a setting", StepInput, "", ""},
	{ConfirmationUnavailable, "The call needs a confirmation it does not have", StepConfirmation, Deny, ""},
	{ConfirmationDeclined, "Confirmation was declined", StepConfirmation, Deny, ""},
}

var codeIndex = func() map[Code]CodeInfo {
	m := make(map[Code]CodeInfo, len(Codes))
	for _, c := range Codes {
		c.Doc = "docs/reasons/" + string(c.Code) + ".md"
		m[c.Code] = c
	}
	return m
}()

// Info returns the declaration of c. An unknown code yields the declaration
// of PolicyError, so a stray code can never read as anything but a deny.
func (c Code) Info() CodeInfo {
	if info, ok := codeIndex[c]; ok {
		return info
	}
	return codeIndex[PolicyError]
}

// Known reports whether c is in the closed set.
func (c Code) Known() bool {
	_, ok := codeIndex[c]
	return ok
}

// CodesData is the table as the policy reads it under data.mcpx.codes: for
// every code, {"code": <code>, "step": <step>}. The Rego builds each
// reason's code and step from it (rego/mcpx/codes/data.json is the copy
// `opa test rego/` loads), so the table here is the one owner of both.
func CodesData() map[string]any {
	out := make(map[string]any, len(Codes))
	for _, c := range Codes {
		out[string(c.Code)] = map[string]any{"code": string(c.Code), "step": string(c.Step)}
	}
	return out
}
