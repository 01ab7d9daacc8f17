package builtin

// All returns every built-in tool, in a fixed order. Add a new built-in's
// constructor here.
func All() []*Tool {
	return []*Tool{
		ReadSkill(),
		QueryHealthIndicators(),
		ImportHealthIndicators(),
		GetGeneticData(),
		ResolveIndicator(),
		NormalizeUnit(),
	}
}
