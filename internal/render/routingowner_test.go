package render

import "testing"

// The routing table's owner is the CRD the operator ships: an owner reference that
// names another would have the garbage collector delete the table at once.
func TestInstallationOwnerIsTheShippedCRD(t *testing.T) {
	crd, err := loadAsset("crd/secondaryschedulers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	owner := InstallationOwner("0b7c")
	if got := crd.GetName(); got != owner.Name {
		t.Errorf("the shipped CRD is %s, the routing table's owner %s", got, owner.Name)
	}
	if got := crd.GetApiVersion() + " " + crd.GetKind(); got != owner.APIVersion+" "+owner.Kind {
		t.Errorf("the shipped CRD is a %s, the routing table's owner a %s %s", got, owner.APIVersion, owner.Kind)
	}
	if owner.UID != "0b7c" || owner.Controller != nil || owner.BlockOwnerDeletion != nil {
		t.Errorf("owner %+v: the CRD's UID, neither controller nor blocking its deletion", owner)
	}
}
