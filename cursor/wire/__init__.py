"""The cursor's Pulsar wire formats: PositionInfo, ManagedCursorInfo, their big repeated fields,
compression."""
