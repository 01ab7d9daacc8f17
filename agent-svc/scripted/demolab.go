package scripted

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
)

// labProposal starts the Demo's proposal of the indicators it read; a
// confirmation answers the message that holds it.
const labProposal = "I read these indicators from your report:"

// labLine matches "Indicator value unit date" in a report's text (a text
// attachment, or the text operators of an uncompressed PDF).
var labLine = regexp.MustCompile(`(?m)([A-Za-z][A-Za-z0-9 ]{0,40}?)\s+(-?\d+(?:\.\d+)?)\s*([A-Za-z%/µ]*[A-Za-z%])?\s+(\d{4}-\d{2}-\d{2})`)

// labRow is one indicator the Demo read.
type labRow struct {
	Indicator string  `json:"indicator"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Time      string  `json:"time"`
	Source    string  `json:"source"`
}

// demoLab is the Demo's lab-report flow (agent-svc/design.md
// "Attachments"): a question with a report attached gets the indicators
// read from it as a table and a request to confirm; "yes" then imports
// them with import_health_indicators; a question asking for a chart reads
// them back with query_health_indicators, whose result the chat charts.
// It returns false when the request is not part of the flow.
func demoLab(r *Received) (Step, bool) {
	q := strings.ToLower(strings.TrimSpace(r.LastUser()))
	steps := r.StepsSinceUser()
	switch {
	case steps == 0 && r.HasTool("import_health_indicators") && len(labRows(r)) > 0:
		var b strings.Builder
		b.WriteString(labProposal + "\n\n| Indicator | Value | Unit | Date | Source |\n|---|---:|---|---|---|\n")
		for _, row := range labRows(r) {
			fmt.Fprintf(&b, "| %s | %g | %s | %s | %s |\n", row.Indicator, row.Value, row.Unit, row.Time, row.Source)
		}
		b.WriteString("\nShall I import them into your health data? Answer yes to confirm.")
		return Step{Text: b.String()}, true
	case (strings.HasPrefix(q, "yes") || strings.Contains(q, "confirm")) && r.HasTool("import_health_indicators"):
		rows := proposedRows(r)
		if len(rows) == 0 {
			return Step{}, false
		}
		if steps == 0 {
			args, _ := json.Marshal(map[string]any{"rows": rows, "confirmed": true})
			return Step{Calls: []Call{{Name: "import_health_indicators", Args: string(args)}}}, true
		}
		res := r.ToolResults()
		if len(res) == 1 && !res[0].IsError {
			return Step{Text: fmt.Sprintf("Done: I imported %d indicators into your health data. Ask me to chart them.", len(rows))}, true
		}
		return Step{Text: "The import failed; nothing was saved."}, true
	case strings.Contains(q, "chart") && r.HasTool("query_health_indicators"):
		if steps == 0 {
			return Step{Calls: []Call{{Name: "query_health_indicators", Args: `{"mode":"rows","limit":100}`}}}, true
		}
		return Step{Text: "Here is the chart of your measurements over time."}, true
	}
	return Step{}, false
}

// labRows reads the indicators of the last user message: its text (text
// attachments arrive inline) and its PDF parts' bytes.
func labRows(r *Received) []labRow {
	last := -1
	for i, m := range r.Messages {
		if m.Role == llm.RoleUser {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	texts := []string{r.Messages[last].Content}
	for _, p := range r.Parts {
		if p.Message == last && p.MediaType == "application/pdf" {
			texts = append(texts, string(p.Data))
		}
	}
	var rows []labRow
	for _, t := range texts {
		for _, m := range labLine.FindAllStringSubmatch(t, -1) {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				continue
			}
			rows = append(rows, labRow{Indicator: strings.TrimSpace(m[1]), Value: v, Unit: m[3], Time: m[4], Source: strings.TrimSpace(m[0])})
		}
	}
	return rows
}

// proposedRows reads back the table of the Demo's last proposal.
func proposedRows(r *Received) []labRow {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != llm.RoleAssistant || !strings.HasPrefix(m.Content, labProposal) {
			continue
		}
		var rows []labRow
		for _, line := range strings.Split(m.Content, "\n") {
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			if len(cells) != 5 {
				continue
			}
			v, err := strconv.ParseFloat(cells[1], 64)
			if err != nil {
				continue
			}
			rows = append(rows, labRow{Indicator: cells[0], Value: v, Unit: cells[2], Time: cells[3], Source: cells[4]})
		}
		return rows
	}
	return nil
}

// demoTitle answers a session-title request with the question's first
// words.
func demoTitle(r *Received) Step {
	q := r.LastUser()
	q, _, _ = strings.Cut(strings.TrimPrefix(q, "Question: "), "\n")
	words := strings.Fields(q)
	return Step{Text: "Demo: " + strings.Join(words[:min(len(words), 4)], " ")}
}
