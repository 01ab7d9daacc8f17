package vfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Subjects of the import protocol. An import is a session: begin, then
// chunks in order, then commit (or abort). Chunks are staged in Postgres,
// so any vfs-svc replica can take any chunk, and nothing reaches the user's
// store before commit.
const (
	SubjectImportBegin  = "vfs.data.import.begin"
	SubjectImportChunk  = "vfs.data.import.chunk"
	SubjectImportCommit = "vfs.data.import.commit"
	SubjectImportAbort  = "vfs.data.import.abort"
)

// Import formats.
const (
	// FormatCSV is health CSV: indicator,value,unit,time[,source], with an
	// optional header line.
	FormatCSV = "csv"
	// FormatJSON is a health JSON array of objects with the CSV's fields.
	// Import converts it to FormatNDJSON, one element per line.
	FormatJSON = "json"
	// FormatNDJSON is one health JSON object per line.
	FormatNDJSON = "ndjson"
	// FormatRaw is a 23andMe or AncestryDNA raw data file.
	FormatRaw = "raw"
)

// ChunkBytes is the most raw text one chunk carries. JSON escaping of tabs
// and quotes can nearly double it, and the result must stay well under
// NATS's default 1 MiB max payload.
const ChunkBytes = 256 << 10

// MaxLineErrors bounds the line errors a result carries; ErrorCount has
// the full count.
const MaxLineErrors = 100

// LineError is one invalid input line (or JSON array element, 1-based).
type LineError struct {
	Line    int64  `json:"line"`
	Message string `json:"message"`
}

// ImportBeginRequest opens an import of Kind (KindHealth or KindGenetic).
type ImportBeginRequest struct {
	AccountID string `json:"account_id"`
	Kind      string `json:"kind"`
	Format    string `json:"format"`
}

// ImportBeginResponse names the new import.
type ImportBeginResponse struct {
	ImportID string `json:"import_id"`
}

// ImportChunkRequest carries whole lines of the input, in order: Seq starts
// at 0 and FirstLine is the 1-based number of Data's first line.
type ImportChunkRequest struct {
	AccountID string `json:"account_id"`
	ImportID  string `json:"import_id"`
	Seq       int64  `json:"seq"`
	FirstLine int64  `json:"first_line"`
	Data      string `json:"data"`
}

// ImportChunkResponse counts the chunk's valid rows and lists its errors.
type ImportChunkResponse struct {
	Rows   int64       `json:"rows"`
	Errors []LineError `json:"errors,omitempty"`
}

// ImportCommitRequest ends an import. Without Partial, any invalid line
// aborts the whole import and nothing is written.
type ImportCommitRequest struct {
	AccountID string `json:"account_id"`
	ImportID  string `json:"import_id"`
	Partial   bool   `json:"partial,omitempty"`
}

// ImportAbortRequest drops an import's staged rows.
type ImportAbortRequest struct {
	AccountID string `json:"account_id"`
	ImportID  string `json:"import_id"`
}

// ImportResult is the outcome of an import. Valid counts the valid input
// rows, Written the distinct rows upserted (duplicates in the input and
// rows already stored are not counted twice in Inserted), Inserted the rows
// that were new. Committed is false when invalid lines stopped an atomic
// import.
type ImportResult struct {
	Kind       string      `json:"kind"`
	Committed  bool        `json:"committed"`
	Valid      int64       `json:"valid"`
	Written    int64       `json:"written"`
	Inserted   int64       `json:"inserted"`
	ErrorCount int64       `json:"error_count"`
	Errors     []LineError `json:"errors,omitempty"`
}

// ImportRequest is one whole import through Data.Import.
type ImportRequest struct {
	AccountID string
	Kind      string
	Format    string
	Partial   bool
}

// Import streams r to vfs-svc as an import session: it cuts r into chunks
// of whole lines (never inside a quoted CSV field), sends them in order and
// commits. A JSON array is re-encoded one element per line on the way. Line
// errors are in the result; a returned error means the import failed as a
// whole and nothing was written.
func (d *Data) Import(ctx context.Context, req *ImportRequest, r io.Reader) (*ImportResult, error) {
	format := req.Format
	if format == FormatJSON {
		pr, pw := io.Pipe()
		go func(src io.Reader) { pw.CloseWithError(jsonArrayToLines(src, pw)) }(r)
		defer pr.Close()
		r, format = pr, FormatNDJSON
	}
	begin, err := wire.Call[ImportBeginRequest, ImportBeginResponse](ctx, d.c, SubjectImportBegin,
		&ImportBeginRequest{AccountID: req.AccountID, Kind: req.Kind, Format: format})
	if err != nil {
		return nil, err
	}
	abort := func(cause error) (*ImportResult, error) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wire.DefaultTimeout)
		defer cancel()
		_, aerr := wire.Call[ImportAbortRequest, wire.Empty](actx, d.c, SubjectImportAbort,
			&ImportAbortRequest{AccountID: req.AccountID, ImportID: begin.ImportID})
		return nil, errors.Join(cause, aerr)
	}
	var errs []LineError
	var nerr int64
	err = chunkLines(r, ChunkBytes, format == FormatCSV, func(seq, firstLine int64, data []byte) error {
		resp, err := wire.Call[ImportChunkRequest, ImportChunkResponse](ctx, d.c, SubjectImportChunk, &ImportChunkRequest{
			AccountID: req.AccountID, ImportID: begin.ImportID, Seq: seq, FirstLine: firstLine, Data: string(data)})
		if err != nil {
			return err
		}
		nerr += int64(len(resp.Errors))
		errs = append(errs, resp.Errors[:min(len(resp.Errors), MaxLineErrors-len(errs))]...)
		return nil
	})
	if err != nil {
		return abort(err)
	}
	res, err := wire.Call[ImportCommitRequest, ImportResult](ctx, d.c, SubjectImportCommit,
		&ImportCommitRequest{AccountID: req.AccountID, ImportID: begin.ImportID, Partial: req.Partial})
	if err != nil {
		return abort(err)
	}
	res.Errors, res.ErrorCount = errs, nerr
	return res, nil
}

// chunkLines calls send with consecutive chunks of whole lines of at most
// max bytes (a longer single line is sent alone and rejected by the
// server). With csvQuotes, a newline inside double quotes does not end a
// chunk, so a quoted CSV field is never split.
func chunkLines(r io.Reader, max int, csvQuotes bool, send func(seq, firstLine int64, data []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf bytes.Buffer
	var seq, line, first int64 = 0, 0, 1
	quotes := 0
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		if err := send(seq, first, buf.Bytes()); err != nil {
			return err
		}
		seq++
		first = line + 1
		buf.Reset()
		return nil
	}
	for {
		part, err := br.ReadSlice('\n')
		if len(part) > 0 {
			if csvQuotes {
				quotes += bytes.Count(part, []byte{'"'})
			}
			if part[len(part)-1] == '\n' {
				line++
			}
			buf.Write(part)
			if quotes%2 == 0 && buf.Len() >= max {
				if ferr := flush(); ferr != nil {
					return ferr
				}
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return flush()
		case err != nil:
			return fmt.Errorf("reading import: %w", err)
		}
	}
}

// jsonArrayToLines copies the elements of a JSON array from r to w, one
// compact element per line.
func jsonArrayToLines(r io.Reader, w io.Writer) error {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return wire.Errorf(wire.InvalidArgument, "reading JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return wire.Errorf(wire.InvalidArgument, "the JSON body must be an array of objects")
	}
	bw := bufio.NewWriter(w)
	for n := 1; dec.More(); n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return wire.Errorf(wire.InvalidArgument, "JSON element %d: %v", n, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return wire.Errorf(wire.InvalidArgument, "JSON element %d: %v", n, err)
		}
		c.WriteByte('\n')
		if _, err := bw.Write(c.Bytes()); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return wire.Errorf(wire.InvalidArgument, "reading JSON: %v", err)
	}
	return bw.Flush()
}
