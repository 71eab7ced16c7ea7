package status

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestConditionsEqualIsSemanticDeepEqual: conditionsEqual answers as
// equality.Semantic.DeepEqual does, for every field's change, transition
// times that are one instant in two forms, nil against empty, and order;
// and it knows every field metav1.Condition has.
func TestConditionsEqualIsSemanticDeepEqual(t *testing.T) {
	var names []string
	for f := range reflect.TypeFor[metav1.Condition]().Fields() {
		names = append(names, f.Name)
	}
	if want := []string{"Type", "Status", "ObservedGeneration", "LastTransitionTime", "Reason", "Message"}; !slices.Equal(names, want) {
		t.Fatalf("metav1.Condition's fields are %v, conditionsEqual compares %v: compare the new ones too", names, want)
	}
	at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	now := time.Now() // with a monotonic reading
	base := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(at), Reason: "Provisioned", Message: "topic t"},
		{Type: "Degraded", Status: metav1.ConditionFalse, ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(at), Reason: "AsExpected"},
	}
	change := func(f func(c *metav1.Condition)) []metav1.Condition {
		c := slices.Clone(base)
		f(&c[1])
		return c
	}
	stockholm, err := time.LoadLocation("Europe/Stockholm")
	if err != nil {
		stockholm = time.FixedZone("CET", 3600)
	}
	tests := []struct {
		name string
		a, b []metav1.Condition
	}{
		{"equal", base, slices.Clone(base)},
		{"type", base, change(func(c *metav1.Condition) { c.Type = "Other" })},
		{"status", base, change(func(c *metav1.Condition) { c.Status = metav1.ConditionTrue })},
		{"observedGeneration", base, change(func(c *metav1.Condition) { c.ObservedGeneration = 4 })},
		{"reason", base, change(func(c *metav1.Condition) { c.Reason = "Other" })},
		{"message", base, change(func(c *metav1.Condition) { c.Message = "m" })},
		{"a later transition", base, change(func(c *metav1.Condition) { c.LastTransitionTime = metav1.NewTime(at.Add(time.Second)) })},
		{"the same instant in another zone", base, change(func(c *metav1.Condition) { c.LastTransitionTime = metav1.NewTime(at.In(stockholm)) })},
		{"the same instant with a monotonic reading", []metav1.Condition{{LastTransitionTime: metav1.NewTime(now)}}, []metav1.Condition{{LastTransitionTime: metav1.NewTime(now.Round(0))}}},
		{"nil and empty", nil, []metav1.Condition{}},
		{"one fewer", base, base[:1]},
		{"another order", base, []metav1.Condition{base[1], base[0]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := equality.Semantic.DeepEqual(tt.a, tt.b)
			if got := conditionsEqual(tt.a, tt.b); got != want {
				t.Errorf("conditionsEqual %v, Semantic.DeepEqual %v", got, want)
			}
		})
	}
}

// TestStatusEqualComparesAllOfIt: a status differing outside its
// conditions is not equal, one differing only in them is not equal, and
// both statuses keep their conditions after the comparison.
func TestStatusEqualComparesAllOfIt(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC))
	mk := func() *v1.BucketyStatus {
		return &v1.BucketyStatus{
			ObservedGeneration: 2,
			Conditions:         []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: at, Reason: "Provisioned"}},
		}
	}
	a, b := mk(), mk()
	if !bucketyStatus.equal(a, b) {
		t.Fatal("equal statuses: want equal")
	}
	if len(a.Conditions) != 1 || len(b.Conditions) != 1 {
		t.Fatalf("the comparison lost conditions: %v, %v", a.Conditions, b.Conditions)
	}
	b.ObservedGeneration = 3
	if bucketyStatus.equal(a, b) {
		t.Error("observedGeneration differs: want not equal")
	}
	b = mk()
	b.Conditions[0].Reason = "Other"
	if bucketyStatus.equal(a, b) {
		t.Error("a condition differs: want not equal")
	}
}
