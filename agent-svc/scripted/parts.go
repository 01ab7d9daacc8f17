package scripted

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// Part is a file part of a user message as it arrived on the wire, so a
// test can check that an attachment reached the provider natively.
type Part struct {
	// Message is the index in Received.Messages of its user message.
	Message int
	// Kind is the part's wire type: image_url or file (Chat Completions),
	// image or document (Messages), input_image or input_file (Responses).
	Kind string
	// MediaType is the type the part declares (its data URL's or its
	// source's).
	MediaType string
	// Filename is the name a file, document or input_file part carries.
	Filename string
	Data     []byte
}

// wirePart is every field the three APIs' file parts use.
type wirePart struct {
	Type     string          `json:"type"`
	ImageURL json.RawMessage `json:"image_url"`
	File     *struct {
		FileData string `json:"file_data"`
		Filename string `json:"filename"`
	} `json:"file"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
	Title    string `json:"title"`
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
}

// fileParts decodes the file parts of a message content (a string has
// none), as the real APIs would refuse a malformed one.
func fileParts(raw json.RawMessage, message int) ([]Part, error) {
	var list []wirePart
	if json.Unmarshal(raw, &list) != nil {
		return nil, nil
	}
	var out []Part
	for _, w := range list {
		p := Part{Message: message, Kind: w.Type}
		var err error
		switch w.Type {
		case "image_url":
			var u struct {
				URL string `json:"url"`
			}
			if err = json.Unmarshal(w.ImageURL, &u); err == nil {
				p.MediaType, p.Data, err = dataURL(u.URL)
			}
		case "input_image":
			var u string
			if err = json.Unmarshal(w.ImageURL, &u); err == nil {
				p.MediaType, p.Data, err = dataURL(u)
			}
		case "file":
			if w.File == nil {
				return nil, fmt.Errorf("file part without file")
			}
			p.Filename = w.File.Filename
			p.MediaType, p.Data, err = dataURL(w.File.FileData)
		case "input_file":
			p.Filename = w.Filename
			p.MediaType, p.Data, err = dataURL(w.FileData)
		case "image", "document":
			if w.Source == nil || w.Source.Type != "base64" {
				return nil, fmt.Errorf("%s block without a base64 source", w.Type)
			}
			p.MediaType, p.Filename = w.Source.MediaType, w.Title
			p.Data, err = base64.StdEncoding.DecodeString(w.Source.Data)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("decoding a %s part: %w", w.Type, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// dataURL decodes a base64 data: URL.
func dataURL(u string) (string, []byte, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	meta, data, ok2 := strings.Cut(rest, ",")
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !ok2 || !isBase64 {
		return "", nil, fmt.Errorf("not a base64 data URL")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	return mediaType, b, err
}
