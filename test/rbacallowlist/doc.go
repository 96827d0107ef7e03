// Package rbacallowlist holds a test that compares every permission shipped in
// config/rbac with an explicit allow-list, so that a new permission, for the operator or
// anyone else, is a conscious change recorded in the test and in docs/security.md.
package rbacallowlist
