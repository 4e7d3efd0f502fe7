package dashboard

import "time"

// TransferSummary is one transfer as the recent-transfers panel lists it.
type TransferSummary struct {
	ID       string    `json:"id"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Amount   int64     `json:"amount"`
	Currency string    `json:"currency"`
	State    string    `json:"state"`
	At       time.Time `json:"at"`
}

// TransferFeed is a source of recent transfers: the ledger's, the wallet's.
type TransferFeed interface {
	// Recent returns up to n transfers, newest first.
	Recent(n int) []TransferSummary
}

// EventSnapshot is one ticketed event's sales as the heatmap draws them.
type EventSnapshot struct {
	Name string `json:"name"`
	// OpensAt is when reservations open; zero if unknown. With SoldOutAt it
	// gives the time to sell out.
	OpensAt time.Time `json:"opens_at,omitzero"`
	// SoldOutAt is when the last seat sold; nil while seats remain.
	SoldOutAt *time.Time     `json:"sold_out_at,omitempty"`
	Areas     []AreaSnapshot `json:"areas"`
}

// AreaSnapshot is one area of an event: its size and how much of it sold.
type AreaSnapshot struct {
	ID        string `json:"id"`
	Rows      int    `json:"rows"`
	Cols      int    `json:"cols"`
	Available int    `json:"available"`
	Sold      int    `json:"sold"`
}

// EventSource is a source of events to draw: the ticketing workload.
type EventSource interface {
	Events() []EventSnapshot
}

// PanelKind tells the page how to draw a panel's data.
type PanelKind string

// The panel kinds the page draws.
const (
	// KindTransfers is a table of []TransferSummary, newest first.
	KindTransfers PanelKind = "transfers"
	// KindEvents is a heatmap per event of []EventSnapshot.
	KindEvents PanelKind = "events"
	// KindLimits is a table of []LimitUse.
	KindLimits PanelKind = "limits"
)

// LimitUse is one of the server's limits in force and how much of it is
// in use.
type LimitUse struct {
	// Name is the limit's flag ("max-conns").
	Name  string `json:"name"`
	Limit int64  `json:"limit"`
	// Used is how much of it is held now; -1 where the limit holds for
	// each connection on its own, and no total says how close it is.
	Used int64 `json:"used"`
	// Unit says what is counted ("connections", "bytes").
	Unit string `json:"unit"`
}

// LimitsPanel lists the limits in force and their use, read from uses.
func LimitsPanel(id, title string, uses func() []LimitUse) Panel {
	return Panel{ID: id, Title: title, Kind: KindLimits, data: func() any { return uses() }}
}

// Panel is one box of the dashboard that a workload plugs in: its data is
// read once per update and sent to every open page.
type Panel struct {
	ID    string
	Title string
	Kind  PanelKind
	data  func() any
}

// recentTransfers is how many transfers a transfers panel shows.
const recentTransfers = 15

// TransfersPanel lists the newest transfers of feed.
func TransfersPanel(id, title string, feed TransferFeed) Panel {
	return Panel{ID: id, Title: title, Kind: KindTransfers, data: func() any { return feed.Recent(recentTransfers) }}
}

// EventsPanel draws each event of src as a heatmap of its areas.
func EventsPanel(id, title string, src EventSource) Panel {
	return Panel{ID: id, Title: title, Kind: KindEvents, data: func() any { return src.Events() }}
}

// panelFrame is a panel as sent to the page.
type panelFrame struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	Kind  PanelKind `json:"kind"`
	Data  any       `json:"data"`
}
