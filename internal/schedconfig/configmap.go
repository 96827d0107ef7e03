package schedconfig

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// MaxConfigBytes is the size of the largest config.yaml the operator accepts. Real
// scheduler configurations take a few KiB; the limit bounds the memory that parsing a
// hostile one can take (at most about 25 MB against the operator's 256 MiB limit): a byte
// of YAML costs about 100 bytes of heap to decode in a
// realistic configuration, and up to about 400 in a dense flow sequence.
const MaxConfigBytes = 64 << 10

// maxListedKeys bounds the keys a message lists: a ConfigMap may have thousands.
const maxListedKeys = 20

// FromConfigMap returns the text of key config.yaml of configMap, refusing with a refusal
// a ConfigMap without the key under data (ReasonConfigKeyMissing, also when the key is
// only under binaryData) and a text larger than MaxConfigBytes (ReasonConfigTooLarge).
// source names the ConfigMap in messages, for example "ConfigMap ns/name". The text is
// not parsed: Parse does that.
func FromConfigMap(configMap *corev1.ConfigMap, source string) ([]byte, error) {
	data, found := configMap.Data[ConfigKey]
	if !found {
		if _, binary := configMap.BinaryData[ConfigKey]; binary {
			return nil, refusal.New(v1.ReasonConfigKeyMissing,
				"%s has key %s under binaryData, but a scheduler configuration is text and is read only from data; move it to data (kubectl create configmap --from-file puts a UTF-8 file there)",
				source, ConfigKey)
		}
		return nil, refusal.New(v1.ReasonConfigKeyMissing,
			"%s has no key %s (its keys: %s); put the KubeSchedulerConfiguration under %s",
			source, ConfigKey, ListKeys(configMap), ConfigKey)
	}
	if err := checkSize(len(data), source); err != nil {
		return nil, err
	}
	return []byte(data), nil
}

func checkSize(size int, source string) error {
	if size <= MaxConfigBytes {
		return nil
	}
	return refusal.New(v1.ReasonConfigTooLarge,
		"key %s of %s is %d bytes, more than the %d bytes (%d KiB) the operator accepts; shorten it: "+
			"a scheduler configuration rarely needs more than a few KiB, so drop comments, unused profiles and plugin args left at their defaults",
		ConfigKey, source, size, MaxConfigBytes, MaxConfigBytes>>10)
}

// ListKeys lists the keys of a ConfigMap's data and binaryData for a message, sorted so
// that the message, and the condition that carries it, stays the same from one reconcile
// to the next, and bounded.
func ListKeys(configMap *corev1.ConfigMap) string {
	keys := slices.Sorted(maps.Keys(configMap.Data))
	keys = append(keys, slices.Sorted(maps.Keys(configMap.BinaryData))...)
	if len(keys) == 0 {
		return "none"
	}
	for i, key := range keys {
		keys[i] = shorten(key)
	}
	if len(keys) > maxListedKeys {
		return fmt.Sprintf("%s and %d more", strings.Join(keys[:maxListedKeys], ", "), len(keys)-maxListedKeys)
	}
	return strings.Join(keys, ", ")
}
