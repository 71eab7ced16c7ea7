package main

import "encoding/json"

// refName is the org.opencontainers.image.ref.name of the layout's image.
func refName(indexJSON []byte) string {
	var idx struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(indexJSON, &idx); err != nil || len(idx.Manifests) != 1 {
		return ""
	}
	return idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"]
}
