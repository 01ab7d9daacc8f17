package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
	"github.com/mirobody/mirobody-go/services/wire"
)

// importTimeout bounds one whole import; a large genetic file is many
// chunk round trips.
const importTimeout = 10 * time.Minute

// dataRoutes adds the user data endpoints (vfs-svc/design.md "User data") to the /api group.
func (s *Service) dataRoutes(api *echo.Group) {
	api.POST("/data/health", s.importHealth)
	api.POST("/data/genetic", s.importGenetic)
	api.DELETE("/data/health", s.deleteHealth)
	api.DELETE("/data/genetic", s.deleteGenetic)
	api.GET("/data", s.dataSummary)
	api.GET("/data/health/series", s.healthSeries)
	api.DELETE("/data/imports/:id", s.deleteImport)
}

// dataSummary answers GET /api/data: the kinds with data (rows, time
// range), the health indicators (unit, count, time range) and the imports
// whose rows are still stored, newest first.
func (s *Service) dataSummary(c echo.Context) error {
	resp, err := userdata.NewData(s.node.Client).Summary(c.Request().Context(), &userdata.SummaryRequest{AccountID: principal(c).AccountID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// seriesPoint is one measurement of a series.
type seriesPoint struct {
	Time   time.Time `json:"time"`
	Value  float64   `json:"value"`
	Source string    `json:"source,omitempty"`
}

// unitSeries is an indicator's measurements in one unit, oldest first.
type unitSeries struct {
	Unit   string        `json:"unit"`
	Points []seriesPoint `json:"points"`
}

// seriesResponse is GET /api/data/health/series: one series per unit (a
// series is charted in one unit), the unit with the most points first.
type seriesResponse struct {
	Indicator string       `json:"indicator"`
	Series    []unitSeries `json:"series"`
}

// maxSeriesPoints is the most recent measurements a series returns (the
// health store's own per-indicator maximum).
const maxSeriesPoints = 10000

// healthSeries answers GET /api/data/health/series?indicator=…[&start=…]
// [&end=…]: the indicator's measurements over time, with their units.
func (s *Service) healthSeries(c echo.Context) error {
	name := strings.TrimSpace(c.QueryParam("indicator"))
	if name == "" {
		return wire.Errorf(wire.InvalidArgument, "indicator is required")
	}
	req := &userdata.HealthQueryRequest{AccountID: principal(c).AccountID, Indicators: []string{name},
		Mode: userdata.HealthRows, Limit: maxSeriesPoints}
	var err error
	if req.Start, err = timeParam(c, "start"); err != nil {
		return err
	}
	if req.End, err = timeParam(c, "end"); err != nil {
		return err
	}
	res, err := userdata.NewData(s.node.Client).QueryHealth(c.Request().Context(), req)
	if err != nil {
		return err
	}
	resp := &seriesResponse{Indicator: name, Series: []unitSeries{}}
	byUnit := map[string]int{}
	for _, r := range res.Rows { // oldest first
		resp.Indicator = r.Indicator
		i, ok := byUnit[r.Unit]
		if !ok {
			i = len(resp.Series)
			byUnit[r.Unit] = i
			resp.Series = append(resp.Series, unitSeries{Unit: r.Unit})
		}
		resp.Series[i].Points = append(resp.Series[i].Points, seriesPoint{Time: r.Time, Value: r.Value, Source: r.Source})
	}
	slices.SortStableFunc(resp.Series, func(a, b unitSeries) int { return len(b.Points) - len(a.Points) })
	return c.JSON(http.StatusOK, resp)
}

// deleteImport answers DELETE /api/data/imports/:id: the rows one import
// stored that no later import has overwritten.
func (s *Service) deleteImport(c echo.Context) error {
	resp, err := userdata.NewData(s.node.Client).DeleteImport(c.Request().Context(),
		&userdata.ImportDeleteRequest{AccountID: principal(c).AccountID, ImportID: c.Param("id")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// importHealth answers POST /api/data/health: CSV
// (indicator,value,unit,time[,source]) or a JSON array. The format comes
// from ?format=csv|json, else the Content-Type, else the first byte.
func (s *Service) importHealth(c echo.Context) error {
	body := bufio.NewReader(s.importBody(c))
	if err := requireText(body, "health data: CSV (indicator,value,unit,time[,source]) or a JSON array"); err != nil {
		return err
	}
	format := c.QueryParam("format")
	if format == "" {
		format = userdata.FormatCSV
		if strings.Contains(c.Request().Header.Get(echo.HeaderContentType), "json") || firstByte(body) == '[' {
			format = userdata.FormatJSON
		}
	}
	if format != userdata.FormatCSV && format != userdata.FormatJSON {
		return wire.Errorf(wire.InvalidArgument, "format %q: want csv or json", format)
	}
	return s.runImport(c, userdata.KindHealth, format, body)
}

// importGenetic answers POST /api/data/genetic: a 23andMe or AncestryDNA
// raw data file.
func (s *Service) importGenetic(c echo.Context) error {
	body := bufio.NewReader(s.importBody(c))
	if err := requireText(body, "genetic data: a 23andMe or AncestryDNA raw data file (text)"); err != nil {
		return err
	}
	return s.runImport(c, userdata.KindGenetic, userdata.FormatRaw, body)
}

// requireText refuses an upload that is not text (a PDF, an image, a zip
// or spreadsheet file) with 415 naming the accepted formats.
func requireText(body *bufio.Reader, accepted string) error {
	head, _ := body.Peek(userdata.SniffBytes) // a shorter body is all there is; read errors surface in the import
	if kind := userdata.NotText(head); kind != "" {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType,
			fmt.Sprintf("the upload is %s, not text; accepted is %s", kind, accepted))
	}
	return nil
}

// importBody is the upload, up to DATA_IMPORT_MAX_BYTES. A large upload
// may take longer than HTTP_READ_TIMEOUT_S: it gets the import's deadline.
func (s *Service) importBody(c echo.Context) io.Reader {
	_ = http.NewResponseController(c.Response()).SetReadDeadline(time.Now().Add(importTimeout))
	return http.MaxBytesReader(c.Response(), c.Request().Body, int64(s.opts.Config.DataImportMaxBytes))
}

// firstByte peeks at the first non-space byte of r.
func firstByte(r *bufio.Reader) byte {
	for i := 1; i <= 512; i++ {
		b, err := r.Peek(i)
		if len(b) < i || err != nil {
			return 0
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != 0xEF && c != 0xBB && c != 0xBF {
			return c
		}
	}
	return 0
}

// runImport streams the body to vfs-svc. A committed import answers 200; an
// atomic import stopped by invalid lines answers 422 with the line errors
// (nothing was written).
func (s *Service) runImport(c echo.Context, kind, format string, body io.Reader) error {
	partial, err := boolParam(c, "partial")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), importTimeout)
	defer cancel()
	res, err := userdata.NewData(s.node.Client).Import(ctx, &userdata.ImportRequest{
		AccountID: principal(c).AccountID, Kind: kind, Format: format, Partial: partial}, body)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		e := wire.TooLarge("upload", 0, mbe.Limit)
		e.Message += " (DATA_IMPORT_MAX_BYTES)"
		return e
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	if !res.Committed {
		status = http.StatusUnprocessableEntity
	}
	return c.JSON(status, res)
}

// deleteHealth answers DELETE /api/data/health: every row, or those of
// ?indicator=… (repeatable) between ?start= and ?end=.
func (s *Service) deleteHealth(c echo.Context) error {
	req := &userdata.HealthDeleteRequest{AccountID: principal(c).AccountID, Indicators: c.QueryParams()["indicator"]}
	var err error
	if req.Start, err = timeParam(c, "start"); err != nil {
		return err
	}
	if req.End, err = timeParam(c, "end"); err != nil {
		return err
	}
	resp, err := userdata.NewData(s.node.Client).DeleteHealth(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// deleteGenetic answers DELETE /api/data/genetic: every variant, or those
// of ?rsid=… (repeatable).
func (s *Service) deleteGenetic(c echo.Context) error {
	resp, err := userdata.NewData(s.node.Client).DeleteGenetic(c.Request().Context(),
		&userdata.GeneticDeleteRequest{AccountID: principal(c).AccountID, RSIDs: c.QueryParams()["rsid"]})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

func boolParam(c echo.Context, name string) (bool, error) {
	v := c.QueryParam(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, wire.Errorf(wire.InvalidArgument, "%s=%q is not a boolean", name, v)
	}
	return b, nil
}

func timeParam(c echo.Context, name string) (*time.Time, error) {
	v := c.QueryParam(name)
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, nil
		}
	}
	return nil, wire.Errorf(wire.InvalidArgument, "%s=%q is not an ISO date or date-time", name, v)
}
