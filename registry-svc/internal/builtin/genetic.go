package builtin

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// GetGeneticData returns the get_genetic_data tool (registry-svc/design.md
// "Built-in tools"): the caller's genotypes by rsid or locus, with the variants
// near each hit found by vfs-svc in the same query.
func GetGeneticData() *Tool {
	return &Tool{
		Name: "get_genetic_data",
		Description: "Look up the user's own genotypes from their imported raw DNA data (23andMe, AncestryDNA). " +
			"Query by rsid (for example rs429358 and rs7412 for APOE), or by chromosome and optionally position; " +
			"optionally filter by genotype (AG matches GA). With include_nearby, each hit also lists the closest " +
			"genotyped variants within nearby_range bases on the same chromosome. A genotype of \"--\" is a no-call. " +
			"Returns the hits, the total number of hits, and the requested rsids the data does not contain.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"rsid":{"type":["array","string"],"items":{"type":"string"},"description":"rsids as a list or a comma-separated string."},` +
			`"chromosome":{"type":"string","description":"Chromosome: 1-22, X, Y, XY or MT (a chr prefix is fine)."},` +
			`"position":{"type":"integer","minimum":0,"description":"Exact position on the chromosome (GRCh37, as in the raw file)."},` +
			`"genotype":{"type":"string","description":"Only hits with this genotype, for example AG."},` +
			`"include_nearby":{"type":"boolean","default":true,"description":"Also list the nearest variants around each hit."},` +
			`"nearby_range":{"type":"integer","minimum":1,"maximum":50000000,"default":1000000,"description":"Distance in bases for nearby variants."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":1000,"default":100,"description":"Hits per page."},` +
			`"offset":{"type":"integer","minimum":0,"default":0,"description":"Hits to skip, for paging."}},` +
			`"additionalProperties":false}`),
		Annotations:   json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
		RequiresData:  userdata.KindGenetic,
		TakesUserInfo: true,
		Call:          getGeneticData,
	}
}

type geneticArgs struct {
	RSID          json.RawMessage `json:"rsid"`
	Chromosome    string          `json:"chromosome"`
	Position      *int64          `json:"position"`
	Genotype      string          `json:"genotype"`
	IncludeNearby *bool           `json:"include_nearby"`
	NearbyRange   int64           `json:"nearby_range"`
	Limit         int             `json:"limit"`
	Offset        int             `json:"offset"`
}

// geneticRequest turns the tool's arguments into a vfs query.
func geneticRequest(account string, args *geneticArgs) (*userdata.GeneticQueryRequest, error) {
	req := &userdata.GeneticQueryRequest{AccountID: account, Chromosome: args.Chromosome, Position: args.Position,
		Genotype: args.Genotype, IncludeNearby: args.IncludeNearby == nil || *args.IncludeNearby,
		NearbyRange: args.NearbyRange, Limit: args.Limit, Offset: args.Offset}
	var ids []string
	if len(args.RSID) > 0 && string(args.RSID) != "null" {
		var one string
		if err := json.Unmarshal(args.RSID, &one); err == nil {
			ids = strings.Split(one, ",")
		} else if err := json.Unmarshal(args.RSID, &ids); err != nil {
			return nil, wire.Errorf(wire.InvalidArgument, "rsid must be a string or a list of strings")
		}
	}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			req.RSIDs = append(req.RSIDs, id)
		}
	}
	if len(req.RSIDs) == 0 && req.Chromosome == "" {
		return nil, Failf("give rsid (for example \"rs429358,rs7412\") or a chromosome")
	}
	return req, nil
}

func getGeneticData(ctx context.Context, req *Request) (any, error) {
	var args geneticArgs
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	q, err := geneticRequest(req.User.UserID, &args)
	if err != nil {
		return nil, err
	}
	resp, err := userdata.NewData(req.Deps.Client).QueryGenetic(ctx, q)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"hits": resp.Hits, "total": resp.Total}
	if len(resp.Missing) > 0 {
		out["missing"] = resp.Missing
		out["note"] = "The raw data has no genotype for the missing rsids: the chip did not test them."
	}
	if more := resp.Total - int64(q.Offset+len(resp.Hits)); more > 0 && len(resp.Hits) > 0 {
		out["next_offset"] = q.Offset + len(resp.Hits)
	}
	return out, nil
}
