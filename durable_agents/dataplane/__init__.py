"""The data plane every process of a deployment shares (worker, AgentClient, agentctl,
the codec server): the data converter (`codec.data_converter_from_env`: pydantic
JSON, the encryption codec, the payload store), the codec and its chunk cipher,
the payload store. Errors derive from `errors.DataPlaneError`."""
