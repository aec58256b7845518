"""What thinks: the `Brain` interface (`base`), the offline shell worker (`shell`) and the Claude
agent (`claude`). The runtime drives a brain; a brain never touches the lifecycle."""
