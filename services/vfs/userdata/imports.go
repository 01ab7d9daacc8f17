package userdata

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Endpoints of the import protocol. An import is a session: begin, then
// chunks in order, then commit (or abort). Chunks are staged in Postgres,
// so any vfs-svc replica can take any chunk, and nothing reaches the user's
// store before commit. Every step is safe to send again, so all four are
// Idempotent and a step whose replica died moves to another one: begin
// names the import the caller chose, a chunk sent again after its answer
// was lost gets the same answer (the import keeps the last chunk's digest
// and answer), a commit sent again gets the kept result, and an abort sent
// again finds the import gone (not_found, which Import ignores).
var (
	ImportBegin  = wire.Endpoint[ImportBeginRequest, ImportBeginResponse]{Subject: "vfs.data.import.begin", Idempotent: true}
	ImportChunk  = wire.Endpoint[ImportChunkRequest, ImportChunkResponse]{Subject: "vfs.data.import.chunk", Idempotent: true}
	ImportCommit = wire.Endpoint[ImportCommitRequest, ImportResult]{Subject: "vfs.data.import.commit", Idempotent: true}
	ImportAbort  = wire.Endpoint[ImportAbortRequest, wire.Empty]{Subject: "vfs.data.import.abort", Idempotent: true}
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

// ChunkBytes is the most raw input one chunk carries. Data travels as
// base64, so a chunk's size on the wire is 4/3 of it whatever the input
// holds (quotes, backslashes, control characters), and Import lowers it
// further when the NATS server's max payload is smaller than NATS's
// default 1 MiB.
const ChunkBytes = 256 << 10

// MaxLineBytes is the longest line an import takes (in CSV, a record with
// quoted newlines counts as one line). A longer one is one line error,
// never split across chunks: no valid row comes near it, and a file with
// no newlines at all is one error, not one per chunk.
const MaxLineBytes = 64 << 10

// chunkEnvelope is room left in a chunk message for everything but its
// data: ids, line numbers, a line error and the request headers.
const chunkEnvelope = 4 << 10

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
	// ImportID is the new import's id, a UUID the caller chose, so that a
	// begin sent again opens nothing new; empty means vfs-svc picks one.
	ImportID  string `json:"import_id,omitempty"`
	AccountID string `json:"account_id"`
	Kind      string `json:"kind"`
	Format    string `json:"format"`
}

// ImportBeginResponse names the new import.
type ImportBeginResponse struct {
	ImportID string `json:"import_id"`
}

// ImportChunkRequest carries whole lines of the input, in order: Seq starts
// at 0 and FirstLine is the 1-based number of Data's first line. Data is
// the input's bytes as they are (base64 in JSON): bytes that are not UTF-8
// reach the parser, which reports their lines, instead of turning into
// U+FFFD in a JSON string.
type ImportChunkRequest struct {
	AccountID string `json:"account_id"`
	ImportID  string `json:"import_id"`
	Seq       int64  `json:"seq"`
	FirstLine int64  `json:"first_line"`
	Data      []byte `json:"data"`
	// LineErrors are lines the sender refused itself (longer than
	// MaxLineBytes) and left out of Data; they count as invalid lines of
	// the import and come back in the response's Errors.
	LineErrors []LineError `json:"line_errors,omitempty"`
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
	begin, err := ImportBegin.Call(ctx, d.c,
		&ImportBeginRequest{ImportID: uuid.NewString(), AccountID: req.AccountID, Kind: req.Kind, Format: format})
	if err != nil {
		return nil, err
	}
	abort := func(cause error) (*ImportResult, error) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wire.DefaultTimeout)
		defer cancel()
		_, aerr := ImportAbort.Call(actx, d.c,
			&ImportAbortRequest{AccountID: req.AccountID, ImportID: begin.ImportID})
		if wire.CodeOf(aerr) == wire.NotFound {
			aerr = nil // a resent abort: the first one dropped it
		}
		return nil, errors.Join(cause, aerr)
	}
	var errs []LineError
	var nerr int64
	chunk, line := chunkSizes(d.c.MaxPayload())
	err = chunkLines(r, chunk, line, format == FormatCSV, func(c *ImportChunkRequest) error {
		c.AccountID, c.ImportID = req.AccountID, begin.ImportID
		resp, err := ImportChunk.Call(ctx, d.c, c)
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
	res, err := ImportCommit.Call(ctx, d.c,
		&ImportCommitRequest{AccountID: req.AccountID, ImportID: begin.ImportID, Partial: req.Partial})
	if err != nil {
		return abort(err)
	}
	res.Errors, res.ErrorCount = errs, nerr
	return res, nil
}

// chunkSizes returns the most raw input per chunk and the longest line
// for a NATS server whose max payload is maxPayload (0: unknown).
func chunkSizes(maxPayload int64) (chunk, line int) {
	chunk = ChunkBytes
	if maxPayload > 0 {
		// base64 turns every 3 bytes into 4.
		chunk = min(chunk, max(1<<10, int(maxPayload-chunkEnvelope)/4*3))
	}
	return chunk, min(MaxLineBytes, chunk)
}

// chunkLines calls send with consecutive chunks of whole lines of at most
// maxChunk bytes, Seq and FirstLine set. A line longer than maxLine is
// left out: it is read to its end (which bounds memory whatever the
// input) and sent as one line error in a chunk of its own. With
// csvQuotes, a newline inside double quotes does not end a line, so a
// quoted CSV field is never split (and an unclosed quote makes the rest
// of the input one line). maxLine must not exceed maxChunk.
func chunkLines(r io.Reader, maxChunk, maxLine int, csvQuotes bool, send func(*ImportChunkRequest) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf, rec bytes.Buffer // the chunk being filled; the line being read
	var seq, lines int64      // chunks sent; newlines read
	bufFirst, recFirst := int64(1), int64(1)
	tooLong := false
	quotes := 0
	lineStart, comment := true, false
	emit := func(c *ImportChunkRequest) error {
		c.Seq = seq
		seq++
		return send(c)
	}
	flush := func() error {
		if buf.Len() == 0 {
			return nil
		}
		// Data is copied: send may keep it while buf is reused.
		err := emit(&ImportChunkRequest{FirstLine: bufFirst, Data: bytes.Clone(buf.Bytes())})
		buf.Reset()
		return err
	}
	endLine := func() error {
		defer func() { rec.Reset(); tooLong = false; recFirst = lines + 1 }()
		if tooLong {
			if err := flush(); err != nil {
				return err
			}
			return emit(&ImportChunkRequest{FirstLine: recFirst, LineErrors: []LineError{
				{Line: recFirst, Message: fmt.Sprintf("line is longer than %d bytes", maxLine)}}})
		}
		if buf.Len() > 0 && buf.Len()+rec.Len() > maxChunk {
			if err := flush(); err != nil {
				return err
			}
		}
		if buf.Len() == 0 {
			bufFirst = recFirst
		}
		buf.Write(rec.Bytes())
		return nil
	}
	for {
		part, err := br.ReadSlice('\n')
		if len(part) > 0 {
			if lineStart {
				// A # comment is skipped whole by the CSV reader, so its
				// quotes open nothing.
				comment = quotes%2 == 0 && part[0] == '#'
			}
			lineStart = part[len(part)-1] == '\n'
			if csvQuotes && !comment {
				quotes += bytes.Count(part, []byte{'"'})
			}
			switch {
			case tooLong:
			case rec.Len()+len(part) > maxLine:
				tooLong = true
				rec.Reset()
			default:
				rec.Write(part)
			}
			if part[len(part)-1] == '\n' {
				lines++
				if quotes%2 == 0 {
					if ferr := endLine(); ferr != nil {
						return ferr
					}
				}
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if rec.Len() > 0 || tooLong {
				if ferr := endLine(); ferr != nil {
					return ferr
				}
			}
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
