package cli

import "net/http"

// BrowserMux is serve's handler over dir, for the tests.
func BrowserMux(dir, store string) http.Handler { return newBrowser(dir, store).mux() }

// MissedStep is find-max --why's choice of the step to explain.
var MissedStep = missedStep
