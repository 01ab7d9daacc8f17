// Package conf loads config.yaml plus environment overrides into one typed
// Config (README.md "Configuration"). Keys are UPPER_SNAKE; an environment variable of the same
// name wins over the file; lists in the environment are comma-separated and
// maps are JSON. A bad value stops startup with one line naming the key.
package conf

// Config holds every configuration key. Each field's tags give its key, its
// default and its constraints; the shipped config.yaml documents each key
// and a test keeps the two in step.
type Config struct {
	// General and logging.
	LogLevel     string `key:"LOG_LEVEL" default:"info" enum:"debug|info|warn|error"`
	LogFormat    string `key:"LOG_FORMAT" default:"auto" enum:"auto|json|text"`
	OTLPEndpoint string `key:"OTEL_EXPORTER_OTLP_ENDPOINT" default:"" url:"true"`
	ShutdownS    int    `key:"SHUTDOWN_GRACE_S" default:"20" min:"1"`
	AdminAddr    string `key:"ADMIN_ADDR" default:"127.0.0.1:18081" addr:"true"`
	SecretKey    string `key:"SECRET_KEY" default:"" secret:"true"`

	// Connections.
	NATSURL      string `key:"NATS_URL" default:"nats://127.0.0.1:4222" url:"true"`
	NATSListen   string `key:"NATS_LISTEN" default:"" addr:"true"`
	NATSCredsDir string `key:"NATS_CREDS_DIR" default:""`
	DatabaseURL  string `key:"DATABASE_URL" default:"" url:"true" secret:"true"`
	DevDir       string `key:"DEV_DIR" default:".mirobody"`
	// LivenessMS is every caller's liveness window (wire.ClientOptions.Liveness);
	// 0 turns liveness off.
	LivenessMS int `key:"LIVENESS_MS" default:"2000" min:"0"`

	// gateway.
	HTTPAddr        string   `key:"HTTP_ADDR" default:"127.0.0.1:18080" addr:"true"`
	MCPPublicURL    string   `key:"MCP_PUBLIC_URL" default:"http://localhost:18080" url:"true"`
	AllowedOrigins  []string `key:"ALLOWED_ORIGINS" default:""`
	Signup          string   `key:"SIGNUP" default:"closed" enum:"open|closed"`
	MaxRequestBytes int      `key:"MAX_REQUEST_BYTES" default:"4194304" min:"1024"`
	MCPSessionKeys  []string `key:"MCP_SESSION_KEYS" default:"" secret:"true"`
	MCPSessionTTLS  int      `key:"MCP_SESSION_TTL_S" default:"86400" min:"60"`
	MCPKeepAliveS   int      `key:"MCP_KEEPALIVE_S" default:"25" min:"1"`
	MCPTaskTTLS     int      `key:"MCP_TASK_TTL_S" default:"3600" min:"60"`
	MCPMaxStreams   int      `key:"MCP_MAX_STREAMS_PER_ACCOUNT" default:"8" min:"1"`
	RateLimitAcct   int      `key:"RATE_LIMIT_ACCOUNT" default:"1200" min:"0"`
	RateLimitIP     int      `key:"RATE_LIMIT_IP" default:"600" min:"0"`
	TrustedProxies  []string `key:"TRUSTED_PROXIES" default:"" cidr:"true"`
	TrustedHeader   string   `key:"TRUSTED_PROXY_HEADER" default:"x-forwarded-for" enum:"x-forwarded-for|forwarded"`
	MaxConnsPerIP   int      `key:"MAX_CONNS_PER_IP" default:"256" min:"0"`
	// Chat attachments (agent-svc/design.md "Attachments").
	AttachMaxBytes int      `key:"CHAT_ATTACHMENT_MAX_BYTES" default:"2097152" min:"1"`
	AttachMaxFiles int      `key:"CHAT_ATTACHMENT_MAX_FILES" default:"4" min:"0"`
	AttachTypes    []string `key:"CHAT_ATTACHMENT_TYPES" default:"image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain,text/csv,text/markdown,application/json"`

	// gateway HTTP server timeouts.
	HTTPReadTimeoutS int `key:"HTTP_READ_TIMEOUT_S" default:"60" min:"1"`
	HTTPIdleTimeoutS int `key:"HTTP_IDLE_TIMEOUT_S" default:"120" min:"1"`

	// registry-svc.
	MCPToolDirs         []string `key:"MCP_TOOL_DIRS" default:"builtin"`
	SkillDirs           []string `key:"SKILL_DIRS" default:"./skills"`
	MCPResourceDirs     []string `key:"MCP_RESOURCE_DIRS" default:""`
	AllowedToolsDeep    []string `key:"ALLOWED_TOOLS_DEEP" default:""`
	DisallowedToolsDeep []string `key:"DISALLOWED_TOOLS_DEEP" default:""`
	AllowedToolsBase    []string `key:"ALLOWED_TOOLS_BASE" default:""`
	DisallowedToolsBase []string `key:"DISALLOWED_TOOLS_BASE" default:""`
	// The gateway reads the tool timeouts too: see Config.ToolTimeout.
	ToolTimeoutS       int            `key:"TOOL_TIMEOUT_S" default:"60" min:"1"`
	ToolTimeouts       map[string]int `key:"TOOL_TIMEOUTS" default:"" min:"1"`
	Python             string         `key:"PYTHON" default:""`
	PythonWorkers      int            `key:"PYTHON_WORKERS" default:"2" min:"1"`
	ToolsWatch         bool           `key:"TOOLS_WATCH" default:"true"`
	MCPClientAllowPriv bool           `key:"MCP_CLIENT_ALLOW_PRIVATE" default:"false"`
	ToolEnv            []string       `key:"TOOL_ENV" default:""`
	ExtMaxResultBytes  int            `key:"EXTERNAL_MAX_RESULT_BYTES" default:"4194304" min:"65536"`
	ExtMaxTools        int            `key:"EXTERNAL_MAX_TOOLS" default:"500" min:"1"`
	ToolSandbox        string         `key:"TOOL_SANDBOX" default:"auto" enum:"required|auto|off"`
	ToolPaths          []string       `key:"TOOL_PATHS" default:""`

	// agent-svc.
	DefaultAgent    string              `key:"DEFAULT_AGENT" default:"deep" enum:"deep|base"`
	Provider        string              `key:"PROVIDER" default:""`
	ProvidersDeep   map[string]Provider `key:"PROVIDERS_DEEP" default:""`
	ProvidersBase   map[string]Provider `key:"PROVIDERS_BASE" default:""`
	OpenAIAPIKey    string              `key:"OPENAI_API_KEY" default:"" secret:"true"`
	AnthropicAPIKey string              `key:"ANTHROPIC_API_KEY" default:"" secret:"true"`
	GoogleAPIKey    string              `key:"GOOGLE_API_KEY" default:"" secret:"true"`
	PromptDeep      string              `key:"PROMPT_DEEP" default:""`
	PromptBase      string              `key:"PROMPT_BASE" default:""`
	PromptsDeep     []string            `key:"PROMPTS_DEEP" default:""`
	PromptsBase     []string            `key:"PROMPTS_BASE" default:""`
	MaxSteps        int                 `key:"MAX_STEPS" default:"50" min:"1"`
	TurnTimeoutS    int                 `key:"TURN_TIMEOUT_S" default:"600" min:"1"`
	SubagentsDeep   map[string]Subagent `key:"SUBAGENTS_DEEP" default:""`
	ContextTokens   int                 `key:"CONTEXT_TOKENS" default:"128000" min:"1000"`
	EvictChars      int                 `key:"TOOL_RESULT_EVICT_CHARS" default:"20000" min:"1000"`
	ProviderRetries int                 `key:"PROVIDER_RETRIES" default:"3" min:"0"`
	HeartbeatMS     int                 `key:"AGENT_HEARTBEAT_MS" default:"2000" min:"50"`
	JSTimeoutS      int                 `key:"JS_TIMEOUT_S" default:"10" min:"1"`
	JSMaxToolCalls  int                 `key:"JS_MAX_TOOL_CALLS" default:"20" min:"1"`
	JSMaxOutput     int                 `key:"JS_MAX_OUTPUT_BYTES" default:"20000" min:"100"`
	JSStateTTLS     int                 `key:"JS_STATE_TTL_S" default:"1800" min:"1"`
	JSMaxMemory     int                 `key:"JS_MAX_MEMORY_BYTES" default:"268435456" min:"1048576"`
	// JSMaxConcurrent and JSMaxEvalsPerAccount: 0 means the number of
	// CPUs (at least 2), and half of JS_MAX_CONCURRENT (at least 1).
	JSMaxConcurrent      int `key:"JS_MAX_CONCURRENT" default:"0" min:"0"`
	JSMaxEvalsPerAccount int `key:"JS_MAX_EVALS_PER_ACCOUNT" default:"0" min:"0"`
	JSMaxStateBytes      int `key:"JS_MAX_STATE_BYTES" default:"536870912" min:"1048576"`
	MaxTurnsPerAccount   int `key:"AGENT_MAX_TURNS_PER_ACCOUNT" default:"8" min:"1"`
	// SessionTitles asks the turn's provider for a short title after a
	// session's first turn.
	SessionTitles bool `key:"AGENT_SESSION_TITLES" default:"true"`

	// vfs-svc.
	VFSMaxFileBytes    int `key:"VFS_MAX_FILE_BYTES" default:"10485760" min:"1"`
	VFSQuotaBytes      int `key:"VFS_QUOTA_BYTES" default:"1073741824" min:"1"`
	DataImportMaxBytes int `key:"DATA_IMPORT_MAX_BYTES" default:"268435456" min:"1024"`
	DBMaxConns         int `key:"DB_MAX_CONNS" default:"10" min:"1"`
	// AuditRetentionDays is how long vfs-svc keeps tool-call audit records.
	AuditRetentionDays int `key:"AUDIT_RETENTION_DAYS" default:"30" min:"1"`

	// Resolved by Load from the environment, since nothing else reads it;
	// these are not keys and never appear in Redacted.

	// ToolEnviron is the complete environment of a Python tool host, as
	// KEY=value: PATH, HOME, LANG and TZ (with defaults when unset) plus
	// the TOOL_ENV names that are set.
	ToolEnviron []string
	// ProviderKeys maps each api_key name that PROVIDERS_DEEP or
	// PROVIDERS_BASE uses to its secret, taken from the config key of that
	// name, else the environment, else a top-level entry of the config
	// file. A name that resolves to nothing is absent.
	ProviderKeys map[string]string
	// Dir is the folder of the config file ("" without one, meaning the
	// working directory): prompt files named in the configuration are
	// relative to it.
	Dir string
}

// Provider is one entry of PROVIDERS_DEEP or PROVIDERS_BASE.
type Provider struct {
	// Type is openai, anthropic, openai-responses or google-genai (Gemini
	// through its OpenAI-compatible endpoint), in lower case.
	Type string `yaml:"type" json:"type"`
	// LLMType is upstream Mirobody's spelling of Type; Load moves it into
	// Type and leaves it empty.
	LLMType string `yaml:"llm_type,omitempty" json:"llm_type,omitempty"`
	// Model is the provider's model name.
	Model string `yaml:"model" json:"model"`
	// APIKey names the config or environment key that holds the secret
	// (any name, such as OPENROUTER_API_KEY); empty means the provider
	// takes no key (Ollama, vLLM). Load resolves it into
	// Config.ProviderKeys.
	APIKey string `yaml:"api_key" json:"api_key"`
	// BaseURL overrides the provider's default endpoint.
	BaseURL string `yaml:"base_url,omitempty" json:"base_url,omitempty"`
	// Temperature is sent with every request when set.
	Temperature *float64 `yaml:"temperature,omitempty" json:"temperature,omitempty"`
	// MaxTokens and MaxCompletionTokens bound one answer (sent as the
	// provider's max_tokens and max_completion_tokens); 0 leaves them out.
	MaxTokens           int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	MaxCompletionTokens int `yaml:"max_completion_tokens,omitempty" json:"max_completion_tokens,omitempty"`
}

// Subagent is one entry of SUBAGENTS_DEEP: a `task` subagent of the Deep
// agent.
type Subagent struct {
	// Description tells the model when to use it.
	Description string `yaml:"description" json:"description"`
	// Prompt is its system prompt.
	Prompt string `yaml:"prompt" json:"prompt"`
}
