package stack

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mirobody/mirobody-go/services/natsx"
)

// natsCredsUsage documents `mirobody nats-creds`.
const natsCredsUsage = `usage: mirobody nats-creds [--dir DIR] [--output table|compose|users|server-config]

Creates the NATS identities of a deployment: one NKey seed per service and
one for the operator commands, as DIR/<identity>.nk (mode 0600). Seeds that
exist are kept, so running it again prints the same keys.

  --output table          identities, public keys and seed files (no secrets)
  --output compose        .env lines for docker compose: public keys and seeds
                          (mirobody nats-creds --output compose >> .env)
  --output users          the public keys as an env file, for the NATS server
                          (kubectl create configmap mirobody-nats-users --from-env-file=...)
  --output server-config  the NATS authorization block (deploy/nats/auth.conf);
                          it writes no seeds
`

// runNATSCreds is `mirobody nats-creds`.
func runNATSCreds(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mirobody nats-creds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, natsCredsUsage) }
	dir := fs.String("dir", "nats-creds", "folder for the seed files")
	output := fs.String("output", "table", "table, compose, users or server-config")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *output == "server-config" {
		_, err := io.WriteString(stdout, natsx.ServerConfig())
		return err
	}
	if *output != "table" && *output != "compose" && *output != "users" {
		return fmt.Errorf("--output must be table, compose, users or server-config, not %q", *output)
	}
	keys, err := natsx.EnsureSeeds(*dir)
	if err != nil {
		return err
	}
	ids := natsx.IdentityNames()
	switch *output {
	case "table":
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "IDENTITY\tPUBLIC KEY\tSEED FILE")
		for _, id := range ids {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", id, keys[id], natsx.SeedFile(*dir, id))
		}
		return tw.Flush()
	case "users":
		for _, id := range ids {
			fmt.Fprintf(stdout, "%s=%s\n", natsx.UserKeyEnv(id), keys[id])
		}
		return nil
	}
	fmt.Fprintln(stdout, "# NATS identities (mirobody nats-creds --output compose); the NKEY lines are secrets.")
	for _, id := range ids {
		seed, err := natsx.Seed(natsx.SeedFile(*dir, id))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s=%s\n%s=%s\n", natsx.UserKeyEnv(id), keys[id], natsx.SeedEnv(id), seed)
	}
	return nil
}
