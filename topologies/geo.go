package topologies

import "math"

// SpeedOfLight is c in vacuum, metres per second.
const SpeedOfLight = 299_792_458.0

// FibreSpeed is the propagation speed assumed for optical fibre, 2/3 c
// (refractive index ~1.5), in metres per second: about 199,862 km/s, i.e.
// ~5.0 microseconds per km. It is the default of LoadGraphML.
const FibreSpeed = SpeedOfLight * 2 / 3

// EarthRadius is the mean Earth radius in metres (IUGG mean radius R1).
const EarthRadius = 6_371_008.8

// haversineTerm returns h = sin^2(dlat/2) + cos(lat1) cos(lat2) sin^2(dlon/2)
// for two points in decimal degrees; the central angle is 2 asin(sqrt(h)).
func haversineTerm(lat1, lon1, lat2, lon2 float64) float64 {
	const r = math.Pi / 180
	la1, la2 := lat1*r, lat2*r
	dlat := la2 - la1
	dlon := (lon2 - lon1) * r
	s1, s2 := math.Sin(dlat/2), math.Sin(dlon/2)
	h := s1*s1 + math.Cos(la1)*math.Cos(la2)*s2*s2
	return min(max(h, 0), 1)
}

// GreatCircle returns the great-circle distance in metres between two points
// given in decimal degrees (haversine formula on a sphere of EarthRadius).
func GreatCircle(lat1, lon1, lat2, lon2 float64) float64 {
	return 2 * EarthRadius * math.Asin(math.Sqrt(haversineTerm(lat1, lon1, lat2, lon2)))
}

// repetitaLagMicros is the link delay in microseconds, before truncation,
// that Repetita's GraphML converter computes (svissicchio/Repetita,
// src/main/scala/be/ac/ucl/ingi/rls/GraphML2DEFO.scala, positions2Lag):
// asin(sqrt(h)) * 1e6/(15 pi) + 5. asin(sqrt(h)) is half the central angle,
// so this is the great-circle distance over ~600,000 km/s plus 5 us. The
// file holds int() of it; links at nodes without coordinates get int() of
// the mean of the untruncated values.
func repetitaLagMicros(lat1, lon1, lat2, lon2 float64) float64 {
	h := haversineTerm(lat1, lon1, lat2, lon2)
	return math.Asin(math.Sqrt(h))*1e6/(15*math.Pi) + 5
}
