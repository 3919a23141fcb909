package cli

// rootCommand is the whole command tree. It is built afresh for every invocation
// (and for help and completion), so that no flag state outlives a run.
func rootCommand() *command {
	return &command{
		name: "queenctl",
		subs: []*command{
			pingCommand(),
			statusCommand(),
			queueCommand(),
			pushCommand(),
			popCommand(),
			ackCommand(),
			tailCommand(),
			cgCommand(),
			dlqCommand(),
			messagesCommand(),
			tracesCommand(),
			streamsCommand(),
			maintenanceCommand(),
			metricsCommand(),
			leaseCommand(),
			txCommand(),
			contextCommand(),
			loginCommand(),
			proxyCommand(),
			versionCommand(),
			completionCommand(),
		},
	}
}
