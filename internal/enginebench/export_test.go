package enginebench

// Medians and RunWith expose medians and run to the external tests.
var (
	Medians = medians
	RunWith = run
)
