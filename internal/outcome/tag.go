package outcome

// Tag returns err that also matches sentinel (errors.Is, errors.As see
// both), with err's message alone: the error already says what went
// wrong, and prefixing the sentinel would say it twice.
func Tag(sentinel, err error) error { return &tagged{sentinel: sentinel, err: err} }

type tagged struct{ sentinel, err error }

func (t *tagged) Error() string   { return t.err.Error() }
func (t *tagged) Unwrap() []error { return []error{t.err, t.sentinel} }
