// The view layer: Preact with hooks, and htm tagged templates bound to Preact's h, so
// components are written as html`<div class=${cls}>…</div>` with no build step.
import { h, render, Fragment, createContext } from '../vendor/preact.mjs';
import {
  useState, useEffect, useLayoutEffect, useRef, useMemo, useCallback, useContext, useReducer,
} from '../vendor/hooks.mjs';
import htm from '../vendor/htm.mjs';

export const html = htm.bind(h);
export {
  h, render, Fragment, createContext,
  useState, useEffect, useLayoutEffect, useRef, useMemo, useCallback, useContext, useReducer,
};
