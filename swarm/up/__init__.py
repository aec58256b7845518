"""Team files: the YAML format and its checks (`spec`), and bringing a team up and down from one
(`apply`)."""
