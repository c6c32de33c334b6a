// placeholder: filled in by the service issue (9)
