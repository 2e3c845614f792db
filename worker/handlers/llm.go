package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/vm"
)

// Provider answers llm.call: llm_complete(prompt). Complete returns the
// model's reply; an error is shown to the program as Err(message), so it
// must name no secret. maxBytes bounds the provider's response body;
// exceeding it is vm.ErrMemoryLimit (wrapped). ctx is the job's (its
// cancellation and wall limit).
type Provider interface {
	Complete(ctx context.Context, prompt string, maxBytes int64) (string, error)
}

// MaxLLMResponseBytes bounds an LLM response body when the run's memory
// allows more.
const MaxLLMResponseBytes = 16 << 20

// OpenAIChat is the Provider for an OpenAI-compatible chat completions
// endpoint: POST URL with {"model": Model, "messages": [{"role": "user",
// "content": prompt}]} and, when Key is set, `Authorization: Bearer Key`;
// the reply is choices[0].message.content. Redirects are not followed (the
// key would travel with them). Every run of 8 bytes of the key is replaced
// by *** in every message and reply (internal/mask), whatever the server
// echoes, before anything is clipped.
type OpenAIChat struct {
	URL, Model, Key string
	// Client sends the requests; nil means a client with default transport
	// settings and no redirects.
	Client *http.Client
}

// NewOpenAIChat returns an OpenAIChat with its own HTTP client.
func NewOpenAIChat(url, model, key string) *OpenAIChat {
	return &OpenAIChat{URL: url, Model: model, Key: key, Client: &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
			MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Complete implements Provider.
func (p *OpenAIChat) Complete(ctx context.Context, prompt string, maxBytes int64) (string, error) {
	body, err := json.Marshal(chatRequest{Model: p.Model, Messages: []chatMessage{{Role: "user", Content: prompt}}})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return "", p.mask(fmt.Errorf("llm: invalid --llm-url: %v", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if p.Key != "" {
		req.Header.Set("Authorization", "Bearer "+p.Key)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		return "", p.mask(fmt.Errorf("llm: request failed: %v", err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", p.mask(fmt.Errorf("llm: reading the response: %v", err))
	}
	if int64(len(data)) > maxBytes {
		return "", fmt.Errorf("llm response over %d bytes: %w", maxBytes, vm.ErrMemoryLimit)
	}
	var cr chatResponse
	jerr := json.Unmarshal(data, &cr)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		detail := string(data)
		if jerr == nil && cr.Error != nil && cr.Error.Message != "" {
			detail = cr.Error.Message
		}
		// Masked before it is clipped: a key cut by the clip would
		// otherwise escape the mask.
		return "", fmt.Errorf("llm: HTTP %s: %s", resp.Status, text.Clip(p.maskText(detail), maxShownBody))
	}
	if jerr != nil {
		return "", p.mask(fmt.Errorf("llm: the response is not chat completions JSON: %v", jerr))
	}
	if len(cr.Choices) == 0 {
		return "", errors.New("llm: the response has no choices")
	}
	return p.maskText(cr.Choices[0].Message.Content), nil
}

// mask replaces the key in err's message (every run of
// mask.MinSecretLen bytes of it).
func (p *OpenAIChat) mask(err error) error {
	if m := p.maskText(err.Error()); m != err.Error() {
		return errors.New(m)
	}
	return err
}

func (p *OpenAIChat) maskText(s string) string {
	if p.Key == "" {
		return s
	}
	return mask.Values(p.Key).String(s)
}

// complete is llm_complete(prompt) through p: Ok(reply), or Err for a
// provider failure.
func complete(ctx context.Context, p Provider, left int64, prompt string) (vm.Value, error) {
	limit := min(left, MaxLLMResponseBytes)
	reply, err := p.Complete(ctx, prompt, limit)
	switch {
	case err == nil:
		return vm.Ok(vm.Str(reply)), nil
	case ctx.Err() != nil:
		return vm.Value{}, ctx.Err()
	case errors.Is(err, vm.ErrMemoryLimit):
		if left < MaxLLMResponseBytes {
			return vm.Value{}, err
		}
		return errValue("llm: response exceeds %d bytes", MaxLLMResponseBytes), nil
	}
	return errValue("%s", err.Error()), nil
}
