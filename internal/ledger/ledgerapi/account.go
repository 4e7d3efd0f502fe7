package ledgerapi

import "github.com/surge-dev/surge/internal/ledger"

func accountField(key []byte) fields {
	switch string(key) {
	case "id":
		return fID
	case "currency":
		return fCurrency
	case "overdraft_limit":
		return fOverdraft
	case "metadata":
		return fMetadata
	}
	return 0
}

// accountInput is an account object as decoded, before validation.
type accountInput struct {
	spec ledger.AccountSpec
	has  fields
}

// decodeAccount decodes and validates the body of POST /v1/accounts.
func decodeAccount(body []byte) (ledger.AccountSpec, *inputError) {
	s := newScanner(body)
	in, err := s.account()
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return ledger.AccountSpec{}, err
	}
	return in.validate()
}

// account decodes the account object at the cursor.
func (s *scanner) account() (in accountInput, err *inputError) {
	if err = s.openObject(""); err != nil {
		return in, err
	}
	var seen fields
	for first := true; ; {
		f, err := s.nextField(&first, &seen, accountField)
		if f == 0 || err != nil {
			return in, err
		}
		var present bool
		switch f {
		case fID:
			present, err = s.setString("id", &in.spec.ID)
		case fCurrency:
			present, err = s.setString("currency", &in.spec.Currency)
		case fOverdraft:
			present, err = s.setInt("overdraft_limit", &in.spec.OverdraftLimit)
		default: // fMetadata
			present, err = s.metadata(&in.spec.Metadata)
		}
		if err != nil {
			return in, err
		}
		if present {
			in.has |= f
		}
	}
}

// metadata decodes the "metadata" object of string values into *m.
func (s *scanner) metadata(m *map[string]string) (bool, *inputError) {
	if null, err := s.null(); null || err != nil {
		return false, err
	}
	if err := s.openObject("metadata"); err != nil {
		return false, err
	}
	md := make(map[string]string)
	for first := true; ; {
		key, ok, err := s.member(&first)
		if err != nil {
			return false, err
		}
		if !ok {
			break
		}
		k := string(key)
		if len(md) == ledger.MaxMetadataKeys {
			// Stop early: a 1 MiB body could otherwise build a map of 100,000 keys.
			return false, s.fail(errValue, "metadata", msgMetadataKeys)
		}
		if _, dup := md[k]; dup {
			return false, s.fail(errDuplicateField, "metadata."+truncate(k, 64), "given more than once")
		}
		if s.peek() != '"' {
			return false, s.wrongType("metadata."+truncate(k, 64), "a string")
		}
		v, err := s.str()
		if err != nil {
			return false, err
		}
		md[k] = string(v)
	}
	*m = md
	return true, nil
}

// validate checks a decoded account against the contract's limits.
func (in *accountInput) validate() (ledger.AccountSpec, *inputError) {
	bad := func(field, msg string) (ledger.AccountSpec, *inputError) {
		return ledger.AccountSpec{}, &inputError{kind: errValue, field: field, msg: msg}
	}
	switch {
	case in.has&fID == 0:
		return bad("id", msgRequired)
	case !ValidID(in.spec.ID):
		return bad("id", msgID)
	case ledger.ServerAccountID(in.spec.ID):
		return bad("id", msgServerAccount)
	case in.has&fCurrency == 0:
		return bad("currency", msgRequired)
	case !ValidCurrency(in.spec.Currency):
		return bad("currency", msgCurrency)
	case in.spec.OverdraftLimit < 0 || in.spec.OverdraftLimit > ledger.MaxAmount:
		return bad("overdraft_limit", msgLimit)
	case len(in.spec.Metadata) > ledger.MaxMetadataKeys:
		return bad("metadata", msgMetadataKeys)
	}
	for k, v := range in.spec.Metadata {
		if len(k) == 0 || len(k) > ledger.MaxMetadataLength || len(v) > ledger.MaxMetadataLength {
			return bad("metadata", msgMetadataSize)
		}
	}
	if len(in.spec.Metadata) == 0 {
		in.spec.Metadata = nil // {} and absent mean the same account
	}
	return in.spec, nil
}
