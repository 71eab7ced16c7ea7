package drivers

import (
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// SecretFormat is a shape of an access's credentials that a client reads
// as it is (a Java properties file, AWS environment variables), added to
// the Secret beside its default keys when the access asks for it
// (spec.secretFormats). A driver renders it in Grant from the same
// credentials as the default keys, so every shape changes with them, at
// once.
type SecretFormat struct {
	// Name is what spec.secretFormats lists: lowercase letters, digits
	// and -.
	Name string
	// Description says which clients read it, and how.
	Description string
	// Keys are the Secret keys the format adds. Optional marks a key the
	// format adds only sometimes (its description says when). Two formats
	// may add the same key (AWS_ACCESS_KEY_ID): its value is the same in
	// both. No key of a format is one of the driver's default keys.
	Keys []SecretKey
	// Several says what the format holds for an access naming several
	// Bucketies (spec.bucketyRefs), or, with OneResource, why it cannot.
	Several string
	// OneResource marks a format that holds one resource only (an
	// ObjectBucketClaim's BUCKET_NAME): an access naming several Bucketies
	// may not list it (ValidateSeveralFormats).
	OneResource bool
}

// SecretFormatter is implemented by drivers that offer SecretFormats.
// Their Grant adds the keys of every format in Access.SecretFormats.
type SecretFormatter interface {
	SecretFormats() []SecretFormat
}

// Formats returns d's secret formats, none when it offers none.
func Formats(d Driver) []SecretFormat {
	if f, ok := d.(SecretFormatter); ok {
		return f.SecretFormats()
	}
	return nil
}

// FormatKeys returns the keys the formats of d add, each once, in the
// order of the formats that declare them, as optional keys whose
// Formats name every format that adds them.
func FormatKeys(d Driver) []SecretKey {
	var out []SecretKey
	for _, f := range Formats(d) {
		for _, k := range f.Keys {
			if i := slices.IndexFunc(out, func(o SecretKey) bool { return o.Name == k.Name }); i >= 0 {
				out[i].Formats = append(out[i].Formats, f.Name)
				continue
			}
			k.Optional = true
			k.Formats = []string{f.Name}
			out = append(out, k)
		}
	}
	return out
}

// AllSecretKeys returns every key a Secret of d may hold: its default keys,
// then the keys of its formats (FormatKeys).
func AllSecretKeys(d Driver) []SecretKey {
	return append(d.SecretKeys(), FormatKeys(d)...)
}

// FormatNames returns the names of d's formats, sorted.
func FormatNames(d Driver) []string {
	var out []string
	for _, f := range Formats(d) {
		out = append(out, f.Name)
	}
	sort.Strings(out)
	return out
}

// ValidateSecretFormats checks spec.secretFormats against the formats d
// offers: each one known, none twice. Errors name the item.
func ValidateSecretFormats(fldPath *field.Path, d Driver, names []string) field.ErrorList {
	var errs field.ErrorList
	known := FormatNames(d)
	seen := map[string]bool{}
	for i, n := range names {
		switch {
		case !slices.Contains(known, n):
			if len(known) == 0 {
				errs = append(errs, field.Invalid(fldPath.Index(i), n, fmt.Sprintf("driver %s offers no secret formats", d.Name())))
				continue
			}
			errs = append(errs, field.NotSupported(fldPath.Index(i), n, known))
		case seen[n]:
			errs = append(errs, field.Duplicate(fldPath.Index(i), n))
		}
		seen[n] = true
	}
	return errs
}

// ValidateSeveralFormats refuses, for an access naming several Bucketies,
// the formats of d that hold one resource only, saying why.
func ValidateSeveralFormats(fldPath *field.Path, d Driver, names []string) field.ErrorList {
	var errs field.ErrorList
	for i, n := range names {
		for _, f := range Formats(d) {
			if f.Name == n && f.OneResource {
				errs = append(errs, field.Invalid(fldPath.Index(i), n, fmt.Sprintf("secret format %s holds one resource (%s): an access naming several Bucketies (spec.bucketyRefs) cannot use it", n, f.Several)))
			}
		}
	}
	return errs
}

// checkSecretFormats: formats named once, described, each adding at least
// one described key that is a Secret data key and not a default key.
func checkSecretFormats(defaults []SecretKey, formats []SecretFormat) error {
	base := map[string]bool{}
	for _, k := range defaults {
		base[k.Name] = true
	}
	seen := map[string]bool{}
	for _, f := range formats {
		switch {
		case !nameRE.MatchString(f.Name):
			return fmt.Errorf("secret format %q must be lowercase letters, digits and -", f.Name)
		case seen[f.Name]:
			return fmt.Errorf("secret format %q declared twice", f.Name)
		case f.Description == "":
			return fmt.Errorf("secret format %q has no description", f.Name)
		case len(f.Keys) == 0:
			return fmt.Errorf("secret format %q adds no key", f.Name)
		case f.OneResource && f.Several == "":
			return fmt.Errorf("secret format %q holds one resource and does not say why (Several)", f.Name)
		}
		seen[f.Name] = true
		keys := map[string]bool{}
		for _, k := range f.Keys {
			switch {
			case !optionalSecretKeyRE.MatchString(k.Name):
				return fmt.Errorf("secret format %q: key %q must be a Secret data key ([-._a-zA-Z0-9]+)", f.Name, k.Name)
			case base[k.Name]:
				return fmt.Errorf("secret format %q: key %q is a default key of the Secret", f.Name, k.Name)
			case keys[k.Name]:
				return fmt.Errorf("secret format %q: key %q declared twice", f.Name, k.Name)
			case k.Description == "":
				return fmt.Errorf("secret format %q: key %q has no description", f.Name, k.Name)
			}
			keys[k.Name] = true
		}
	}
	return nil
}
