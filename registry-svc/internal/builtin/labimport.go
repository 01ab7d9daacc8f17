package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// maxImportRows bounds the rows of one import_health_indicators call: a
// lab report holds dozens, not thousands.
const maxImportRows = 500

// ImportHealthIndicators returns the import_health_indicators tool
// (registry-svc/design.md "Lab-report import"): the second half of the
// lab-report flow. The agent first shows the user the indicators it read
// from an attached report; once the user confirms, it calls this tool
// with the confirmed rows, which are imported through the userdata
// contract like an uploaded file, so the data-gated tools light up.
func ImportHealthIndicators() *Tool {
	return &Tool{
		Name: "import_health_indicators",
		Description: "Save confirmed health measurements (for example the indicators read from an attached lab report) into the user's health data. " +
			"First list the rows you read (indicator, value, unit, date, source line) and ask the user to confirm; call this only after the user confirmed, " +
			"with confirmed=true and exactly the confirmed rows. The import is all or nothing: an invalid row rejects the call and names the row.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"rows":{"type":"array","minItems":1,"maxItems":500,"items":{"type":"object","properties":{` +
			`"indicator":{"type":"string","minLength":1,"description":"Indicator name as printed (e.g. Glucose, HbA1c, 血糖)."},` +
			`"value":{"type":"number"},` +
			`"unit":{"type":"string","description":"Unit as printed (mg/dL, %, mmol/L); empty for none."},` +
			`"time":{"type":"string","minLength":1,"description":"Date of the sample, ISO date (2026-03-14) or date-time."},` +
			`"source":{"type":"string","description":"Where the row comes from: the report's file name and its line as printed."}},` +
			`"required":["indicator","value","unit","time"],"additionalProperties":false}},` +
			`"confirmed":{"type":"boolean","const":true,"description":"true: the user confirmed these rows."}},` +
			`"required":["rows","confirmed"],"additionalProperties":false}`),
		Annotations:   json.RawMessage(`{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}`),
		TakesUserInfo: true,
		Call:          importHealthIndicators,
	}
}

// labRow is one confirmed measurement, in the NDJSON shape of a health
// import.
type labRow struct {
	Indicator string  `json:"indicator"`
	Value     float64 `json:"value"`
	Unit      string  `json:"unit"`
	Time      string  `json:"time"`
	Source    string  `json:"source,omitempty"`
}

func importHealthIndicators(ctx context.Context, req *Request) (any, error) {
	var args struct {
		Rows      []labRow `json:"rows"`
		Confirmed bool     `json:"confirmed"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	if !args.Confirmed {
		return nil, Failf("ask the user to confirm the rows first, then call again with confirmed=true")
	}
	if len(args.Rows) == 0 || len(args.Rows) > maxImportRows {
		return nil, wire.Errorf(wire.InvalidArgument, "rows holds 1 to %d measurements", maxImportRows)
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, r := range args.Rows {
		if err := enc.Encode(r); err != nil {
			return nil, fmt.Errorf("encoding a row: %w", err)
		}
	}
	res, err := userdata.NewData(req.Deps.Client).Import(ctx, &userdata.ImportRequest{AccountID: req.User.UserID, Kind: userdata.KindHealth, Format: userdata.FormatNDJSON}, &body)
	if err != nil {
		return nil, err
	}
	if !res.Committed {
		msg := "nothing was imported: some rows are invalid"
		for _, e := range res.Errors {
			msg += fmt.Sprintf("; row %d: %s", e.Line, e.Message)
		}
		return nil, Failf("%s", msg)
	}
	return map[string]any{"imported": res.Written, "new": res.Inserted,
		"note": "Saved to the user's health data; query_health_indicators can read it now."}, nil
}
