package sim

import "strings"

// PaperValue is one number of paper 003's result tables, in seconds: the
// PETALS-based experiment and, in parentheses in the paper, its MATLAB
// simulator.
type PaperValue struct {
	Experiment float64 `json:"experiment"`
	MATLAB     float64 `json:"matlab"`
}

// PaperCell is what paper 003 reports for one algorithm in one setting:
// average time per token over all tokens (Table 4 / 5), for the first token
// (Table C.7 / C.9) and per remaining token (Table C.8 / C.10).
type PaperCell struct {
	PerToken       PaperValue `json:"per_token"`
	FirstToken     PaperValue `json:"first_token"`
	RemainingToken PaperValue `json:"remaining_token"`
}

// paperKey indexes the columns of Tables 4, 5 and C.7-C.10: request rate
// 0.1 or 0.5 per second, l_max 64 or 128 (lI = 20, 100 requests).
type paperKey struct {
	row    string // "Cluster0".."Cluster2", "Abvt", "Bellcanada", "GtsCe"
	rate   float64
	output int
}

type paperRow struct {
	petals, proposed PaperCell
}

// cols is the column order of the paper's tables.
var cols = []struct {
	rate   float64
	output int
}{{0.1, 64}, {0.1, 128}, {0.5, 64}, {0.5, 128}}

// pv builds the four cells of one table row from "exp (matlab)" pairs.
func pv(v ...float64) [4]PaperValue {
	var out [4]PaperValue
	for i := range out {
		out[i] = PaperValue{Experiment: v[2*i], MATLAB: v[2*i+1]}
	}
	return out
}

// paperRows holds, per row of the tables, the per-token (Table 4/5),
// first-token (C.7/C.9) and remaining-token (C.8/C.10) values of PETALS and
// of the proposed algorithm, typed in from paper 003.
var paperRows = func() map[paperKey]paperRow {
	type src struct {
		row                                      string
		petPT, petFT, petRT, proPT, proFT, proRT [4]PaperValue
	}
	rows := []src{
		{"Cluster0",
			pv(6.23, 5.33, 4.76, 4.74, 6.28, 5.33, 5.14, 4.74),
			pv(275.51, 252.61, 455.61, 427.72, 315.53, 252.61, 508.52, 427.72),
			pv(1.96, 1.40, 1.21, 1.41, 1.37, 1.40, 1.18, 1.41),
			pv(1.92, 1.59, 1.43, 0.92, 2.00, 1.59, 1.34, 0.92),
			pv(60.43, 73.51, 62.98, 60.91, 66.94, 73.51, 69.62, 60.91),
			pv(0.99, 0.45, 0.94, 0.45, 0.96, 0.45, 0.81, 0.45)},
		{"Cluster1",
			pv(5.44, 5.17, 4.60, 4.58, 5.56, 5.17, 4.79, 4.58),
			pv(236.34, 252.51, 463.39, 424.94, 298.27, 252.51, 489.85, 424.06),
			pv(1.78, 1.25, 0.99, 1.27, 0.91, 1.25, 0.97, 1.27),
			pv(1.78, 1.65, 1.04, 0.83, 1.88, 1.65, 1.11, 0.83),
			pv(55.47, 85.50, 59.67, 72.06, 57.37, 85.50, 65.96, 72.06),
			pv(0.93, 0.32, 0.58, 0.26, 0.98, 0.32, 0.60, 0.26)},
		{"Cluster2",
			pv(5.30, 4.85, 4.85, 4.07, 5.34, 4.85, 5.25, 4.07),
			pv(245.70, 251.95, 470.33, 404.42, 259.69, 251.95, 480.43, 404.42),
			pv(1.49, 0.93, 1.18, 0.91, 1.29, 0.93, 1.51, 0.91),
			pv(1.79, 1.59, 1.31, 0.92, 1.94, 1.59, 1.37, 0.92),
			pv(50.96, 73.51, 55.72, 60.91, 55.36, 73.51, 59.86, 60.91),
			pv(1.01, 0.45, 0.88, 0.45, 1.09, 0.45, 0.91, 0.45)},
		{"Abvt",
			pv(4.98, 4.75, 4.03, 3.88, 5.26, 5.11, 4.58, 4.10),
			pv(270.96, 254.74, 408.59, 316.21, 279.38, 264.81, 486.68, 412.72),
			pv(0.77, 0.79, 0.84, 0.92, 0.91, 0.98, 0.78, 0.88),
			pv(1.86, 1.63, 1.44, 1.36, 1.97, 1.83, 1.35, 1.05),
			pv(76.48, 73.69, 89.15, 104.19, 81.65, 81.12, 91.41, 75.78),
			pv(0.67, 0.52, 0.75, 0.55, 0.70, 0.57, 0.64, 0.46)},
		{"Bellcanada",
			pv(6.31, 6.03, 3.82, 3.49, 6.74, 6.19, 4.16, 3.41),
			pv(360.94, 353.12, 382.01, 354.06, 378.10, 353.46, 417.17, 353.72),
			pv(0.69, 0.53, 0.84, 0.73, 0.80, 0.68, 0.91, 0.66),
			pv(1.33, 1.41, 1.26, 0.92, 1.49, 1.41, 1.11, 0.92),
			pv(53.42, 62.75, 59.73, 62.68, 63.78, 62.67, 66.84, 62.70),
			pv(0.50, 0.44, 0.79, 0.44, 0.51, 0.44, 0.59, 0.44)},
		{"GtsCe",
			pv(7.05, 6.12, 4.69, 3.47, 6.89, 5.97, 4.89, 3.37),
			pv(393.93, 353.48, 478.71, 354.05, 389.35, 353.46, 505.90, 353.79),
			pv(0.92, 0.61, 0.96, 0.71, 0.83, 0.44, 0.95, 0.67),
			pv(1.38, 1.41, 0.95, 0.91, 1.35, 1.40, 1.07, 0.91),
			pv(55.30, 62.84, 58.59, 62.66, 58.17, 62.65, 61.22, 62.65),
			pv(0.52, 0.43, 0.50, 0.42, 0.49, 0.42, 0.59, 0.43)},
	}
	m := map[paperKey]paperRow{}
	for _, r := range rows {
		for i, c := range cols {
			m[paperKey{r.row, c.rate, c.output}] = paperRow{
				petals:   PaperCell{r.petPT[i], r.petFT[i], r.petRT[i]},
				proposed: PaperCell{r.proPT[i], r.proFT[i], r.proRT[i]},
			}
		}
	}
	return m
}()

// PaperClustered returns paper 003's Table 4 / C.7 / C.8 values for the
// clustered scenario with the client in clientCluster, or ok = false when
// the paper has no such column (it reports rates 0.1 and 0.5 per second and
// l_max 64 and 128, with lI = 20 and 100 requests).
func PaperClustered(clientCluster int, rate float64, outputTokens int) (petals, proposed PaperCell, ok bool) {
	names := []string{"Cluster0", "Cluster1", "Cluster2"}
	if clientCluster < 0 || clientCluster >= len(names) {
		return PaperCell{}, PaperCell{}, false
	}
	r, ok := paperRows[paperKey{names[clientCluster], rate, outputTokens}]
	return r.petals, r.proposed, ok
}

// PaperTopology returns paper 003's Table 5 / C.9 / C.10 values for the
// topology file named name ("Abvt", "Bellcanada" or "GtsCe", any case), or
// ok = false. The paper ran those with 9 servers (2 A100s) on AboveNet and
// 26 (5 A100s) on BellCanada and GTS-CE.
func PaperTopology(name string, rate float64, outputTokens int) (petals, proposed PaperCell, ok bool) {
	for _, row := range []string{"Abvt", "Bellcanada", "GtsCe"} {
		if strings.EqualFold(row, name) {
			r, ok := paperRows[paperKey{row, rate, outputTokens}]
			return r.petals, r.proposed, ok
		}
	}
	return PaperCell{}, PaperCell{}, false
}

// PaperDeployment returns the servers and A100 count the paper used for a
// topology of Table 5 (Sec. 4.1: 2 A100s + 7 MIGs for AboveNet, 5 A100s +
// 21 MIGs for BellCanada and GTS-CE), or ok = false.
func PaperDeployment(name string) (servers, a100 int, ok bool) {
	switch strings.ToLower(name) {
	case "abvt":
		return 9, 2, true
	case "bellcanada", "gtsce":
		return 26, 5, true
	}
	return 0, 0, false
}
