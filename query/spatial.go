package query

import (
	"fmt"

	"github.com/golang/geo/earth"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// Spatial functions over GeoJSON (Point, LineString, Polygon,
// MultiPolygon) on the sphere, as Cosmos DB's geography computes them:
// coordinates are [longitude, latitude] in degrees (WGS-84), edges are
// great-circle arcs, distances are in meters. The geometry is
// github.com/golang/geo's S2 library; distances use the Earth's mean
// radius (earth.Radius, 6,371.01 km), so they differ from an ellipsoidal
// computation by up to about 0.5%. A polygon ring is closed (its first and
// last positions are equal) and bounds the smaller of the two regions it
// splits the sphere into, whichever way it turns. An argument that is not
// valid GeoJSON of these types makes ST_DISTANCE, ST_WITHIN and
// ST_INTERSECTS undefined and ST_ISVALID false.

// geometry is a parsed GeoJSON value.
type geometry struct {
	points []s2.Point
	lines  []*s2.Polyline
	polys  []*s2.Polygon
	index  *s2.ShapeIndex
}

// geoError is why a value is not valid GeoJSON, for ST_ISVALIDDETAILED.
type geoError string

// parseGeometry reads a GeoJSON value; the error says what is wrong.
func parseGeometry(v any) (*geometry, geoError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "The input is not a GeoJSON object."
	}
	typ, _ := m["type"].(string)
	coords, ok := m["coordinates"].([]any)
	if !ok {
		return nil, geoError(fmt.Sprintf("The %s input is not valid because its coordinates are not an array.", orType(typ)))
	}
	g := &geometry{index: s2.NewShapeIndex()}
	switch typ {
	case "Point":
		p, err := position(coords)
		if err != "" {
			return nil, err
		}
		g.points = append(g.points, p)
		pv := s2.PointVector(g.points)
		g.index.Add(&pv)
	case "LineString":
		line, err := lineString(coords)
		if err != "" {
			return nil, err
		}
		g.lines = append(g.lines, line)
		g.index.Add(line)
	case "Polygon":
		poly, err := polygon(coords, 0)
		if err != "" {
			return nil, err
		}
		g.polys = append(g.polys, poly)
		g.index.Add(poly)
	case "MultiPolygon":
		if len(coords) == 0 {
			return nil, "The MultiPolygon input is not valid because it has no polygons."
		}
		for i, c := range coords {
			rings, ok := c.([]any)
			if !ok {
				return nil, geoError(fmt.Sprintf("The MultiPolygon input is not valid because polygon number %d is not an array of rings.", i+1))
			}
			poly, err := polygon(rings, i+1)
			if err != "" {
				return nil, err
			}
			g.polys = append(g.polys, poly)
			g.index.Add(poly)
		}
	default:
		return nil, geoError(fmt.Sprintf("The GeoJSON type %q is not supported: Point, LineString, Polygon and MultiPolygon are.", typ))
	}
	return g, ""
}

func orType(typ string) string {
	if typ == "" {
		return "GeoJSON"
	}
	return typ
}

// position reads [longitude, latitude].
func position(v any) (s2.Point, geoError) {
	c, ok := v.([]any)
	if !ok || len(c) < 2 {
		return s2.Point{}, "A position is not valid because it is not an array of at least two numbers."
	}
	lng, ok1 := c[0].(float64)
	lat, ok2 := c[1].(float64)
	if !ok1 || !ok2 {
		return s2.Point{}, "A position is not valid because its longitude or latitude is not a number."
	}
	if lat < -90 || lat > 90 {
		return s2.Point{}, "Latitude values must be between -90 and 90 degrees."
	}
	if lng < -180 || lng > 180 {
		return s2.Point{}, "Longitude values must be between -180 and 180 degrees."
	}
	return s2.PointFromLatLng(s2.LatLngFromDegrees(lat, lng)), ""
}

func positions(vs []any) ([]s2.Point, geoError) {
	pts := make([]s2.Point, 0, len(vs))
	for _, v := range vs {
		p, err := position(v)
		if err != "" {
			return nil, err
		}
		pts = append(pts, p)
	}
	return pts, ""
}

func lineString(coords []any) (*s2.Polyline, geoError) {
	pts, err := positions(coords)
	if err != "" {
		return nil, err
	}
	if len(pts) < 2 {
		return nil, "The LineString input is not valid because it has fewer than two points."
	}
	line := s2.Polyline(pts)
	if e := line.Validate(); e != nil {
		return nil, geoError("The LineString input is not valid: " + e.Error())
	}
	return &line, ""
}

// polygon reads the rings of a Polygon (n > 0: polygon n of a
// MultiPolygon, for the messages).
func polygon(rings []any, n int) (*s2.Polygon, geoError) {
	what := "Polygon"
	if n > 0 {
		what = fmt.Sprintf("MultiPolygon (polygon number %d)", n)
	}
	if len(rings) == 0 {
		return nil, geoError(fmt.Sprintf("The %s input is not valid because it has no rings.", what))
	}
	loops := make([]*s2.Loop, 0, len(rings))
	for i, r := range rings {
		ring, ok := r.([]any)
		if !ok {
			return nil, geoError(fmt.Sprintf("The %s input is not valid because ring number %d is not an array of positions.", what, i+1))
		}
		pts, err := positions(ring)
		if err != "" {
			return nil, err
		}
		if len(pts) < 4 {
			return nil, geoError(fmt.Sprintf("The %s input is not valid because ring number %d has fewer than four points. Each ring of a polygon must have at least four points.", what, i+1))
		}
		if pts[0] != pts[len(pts)-1] {
			return nil, geoError(fmt.Sprintf("The %s input is not valid because the start and end points of the ring number %d are not the same. Each ring of a polygon must have the same start and end points.", what, i+1))
		}
		loop := s2.LoopFromPoints(pts[:len(pts)-1])
		if e := loop.Validate(); e != nil {
			return nil, geoError(fmt.Sprintf("The %s input is not valid because ring number %d is not valid: %v.", what, i+1, e))
		}
		if selfCrossing(loop.Vertices()) {
			return nil, geoError(fmt.Sprintf("The %s input is not valid because ring number %d intersects itself.", what, i+1))
		}
		loop.Normalize() // the smaller region, whichever way the ring turns
		loops = append(loops, loop)
	}
	poly := s2.PolygonFromLoops(loops)
	if e := poly.Validate(); e != nil {
		return nil, geoError(fmt.Sprintf("The %s input is not valid: %v.", what, e))
	}
	return poly, ""
}

// selfCrossing reports whether two edges of a ring that share no vertex
// cross (S2's Go port does not check this yet). It costs a test per pair
// of edges: quadratic in the ring's length.
func selfCrossing(vs []s2.Point) bool {
	n := len(vs)
	for i := 0; i < n; i++ {
		c := s2.NewEdgeCrosser(vs[i], vs[(i+1)%n])
		for j := i + 2; j < n; j++ {
			if i == 0 && j == n-1 {
				continue // adjacent through the closing edge
			}
			if c.CrossingSign(vs[j], vs[(j+1)%n]) != s2.DoNotCross {
				return true
			}
		}
	}
	return false
}

// touching is how close two geometries must be to intersect: about a
// millimeter, for points on an edge that rounding puts a hair away.
var touching = s1.ChordAngleFromAngle(s1.Angle(1e-3 / earth.Radius.Meters()))

// distance is the shortest distance between a and b, interiors included
// (0 when they intersect).
func (a *geometry) distance(b *geometry) s1.ChordAngle {
	q := s2.NewClosestEdgeQuery(a.index, s2.NewClosestEdgeQueryOptions().IncludeInteriors(true))
	return q.Distance(s2.NewMinDistanceToShapeIndexTarget(b.index))
}

func (a *geometry) intersects(b *geometry) bool {
	return a.distance(b) <= touching
}

// within reports whether every point of a lies in b.
func (a *geometry) within(b *geometry) bool {
	if len(b.polys) == 0 {
		// Only points can lie within a point or a line.
		return len(a.lines) == 0 && len(a.polys) == 0 && a.intersects(b)
	}
	inB := func(p s2.Point) bool {
		for _, poly := range b.polys {
			if poly.ContainsPoint(p) {
				return true
			}
		}
		return false
	}
	for _, p := range a.points {
		if !inB(p) {
			return false
		}
	}
	for _, line := range a.lines {
		for _, p := range *line {
			if !inB(p) {
				return false
			}
		}
		if crossesBoundary(*line, b) {
			return false
		}
	}
	for _, pa := range a.polys {
		contained := false
		for _, pb := range b.polys {
			if pb.Contains(pa) {
				contained = true
				break
			}
		}
		if !contained {
			return false
		}
	}
	return true
}

// crossesBoundary reports whether an edge of line crosses an edge of one
// of b's polygons.
func crossesBoundary(line []s2.Point, b *geometry) bool {
	for i := 0; i+1 < len(line); i++ {
		c := s2.NewEdgeCrosser(line[i], line[i+1])
		for _, poly := range b.polys {
			for _, loop := range poly.Loops() {
				vs := loop.Vertices()
				for j := range vs {
					if c.CrossingSign(vs[j], vs[(j+1)%len(vs)]) == s2.Cross {
						return true
					}
				}
			}
		}
	}
	return false
}

// spatial2 builds the functions of two geometries: undefined unless both
// are valid.
func spatial2(f func(a, b *geometry) any) builtin {
	return builtin{2, 2, func(args []any) any {
		a, errA := parseGeometry(args[0])
		b, errB := parseGeometry(args[1])
		if errA != "" || errB != "" {
			return Undefined
		}
		return f(a, b)
	}}
}

var spatialBuiltins = map[string]builtin{
	// ST_DISTANCE: meters between the closest points (0 when they meet).
	"ST_DISTANCE": spatial2(func(a, b *geometry) any {
		d := a.distance(b)
		if d.IsInfinity() {
			return Undefined
		}
		return finite(d.Angle().Radians() * earth.Radius.Meters())
	}),
	"ST_INTERSECTS": spatial2(func(a, b *geometry) any { return a.intersects(b) }),
	"ST_WITHIN":     spatial2(func(a, b *geometry) any { return a.within(b) }),
	"ST_ISVALID": {1, 1, func(args []any) any {
		_, err := parseGeometry(args[0])
		return err == ""
	}},
	"ST_ISVALIDDETAILED": {1, 1, func(args []any) any {
		_, err := parseGeometry(args[0])
		if err == "" {
			return map[string]any{"valid": true, "reason": "Valid Geography"}
		}
		return map[string]any{"valid": false, "reason": string(err)}
	}},
}
