"""What a person sees: a read-only snapshot of a team (`snapshot`), its text (`table`), the live
dashboard (`dashboard`), transcripts as lines (`logs`), prices (`costs`), and how a request is
shown (`request_text`)."""
