// Placeholder until the gateway wiring lands.
